//! End-to-end checks of the baseline engine against independent reference models and the
//! counts the papers state.

use std::collections::VecDeque;
use xlat::addr::{PageSize, VirtAddr};
use xlat::assoc::Replacement;
use xlat::mem::cache::Cache;
use xlat::mem::cache::CacheConfig;
use xlat::mem::MemKind;
use xlat::mmu::config::TlbConfig;
use xlat::mmu::tlb::Tlb;
use xlat::mmu::walk::WalkPlan;
use xlat::os::{MapKind, Os};
use xlat::pt::radix::RadixPageTable;
use xlat::rng::Rng;
use xlat::run::Recorded;
use xlat::schemes::radix::{Radix, RadixWalker};
use xlat::trace::{Record, RecordSource, Roi};
use xlat::{SimConfig, Simulation};

mod common;

fn small(extra: &[&str]) -> xlat::SimConfig {
    let mut ov: Vec<String> = vec![
        "os.physmem.bytes=2147483648".into(),
        "os.physmem.fragmentation=0.0".into(),
        "workload.table_bytes=67108864".into(),
        "workload.references=200000".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    SimConfig::load("baseline-radix", &ov).unwrap()
}

fn os_for(cfg: &xlat::SimConfig) -> Os<RadixPageTable> {
    xlat::sim::system::boot_os::<Radix>(cfg).unwrap()
}

fn walk_refs(
    walker: &mut RadixWalker,
    os: &Os<RadixPageTable>,
    va: VirtAddr,
) -> (usize, Option<PageSize>) {
    let pt = &os.process(0).unwrap().pt;
    let mut plan = WalkPlan::default();
    let found = walker.plan(va, 0, pt, &os.store, &mut plan);
    (plan.refs().len(), found.map(|f| f.1))
}

#[test]
fn cold_walks_read_one_entry_per_level_and_pwc_hits_skip_levels() {
    let cfg = small(&["os.thp=always"]);
    let mut os = os_for(&cfg);
    let pid = os.spawn().unwrap();
    let small_region = os.mmap(pid, 8192, MapKind::Anon).unwrap();
    let thp_region = os.mmap(pid, 4 << 20, MapKind::Anon).unwrap();
    let giant = os.mmap(pid, 1 << 30, MapKind::Huge1G).unwrap();
    assert_eq!(os.fault(pid, small_region).unwrap().1, PageSize::Size4K);
    assert_eq!(os.fault(pid, thp_region).unwrap().1, PageSize::Size2M);
    assert_eq!(os.fault(pid, giant).unwrap().1, PageSize::Size1G);
    let none = |_: ()| cfg.schemes.radix.walker();
    // Cold PWCs: 4 KiB reads 4 entries, 2 MiB 3, 1 GiB 2.
    assert_eq!(
        walk_refs(&mut none(()), &os, small_region),
        (4, Some(PageSize::Size4K))
    );
    assert_eq!(
        walk_refs(&mut none(()), &os, thp_region),
        (3, Some(PageSize::Size2M))
    );
    assert_eq!(
        walk_refs(&mut none(()), &os, giant),
        (2, Some(PageSize::Size1G))
    );
    // Warm PWCs: the second page of the 4 KiB region hits the PD-entry cache: one reference.
    let mut w = cfg.schemes.radix.walker();
    walk_refs(&mut w, &os, small_region);
    os.fault(pid, VirtAddr(small_region.0 + 4096)).unwrap();
    assert_eq!(
        walk_refs(&mut w, &os, VirtAddr(small_region.0 + 4096)),
        (1, Some(PageSize::Size4K))
    );
    // The 2 MiB region is in another PD but (16 TiB + small offsets) the same PDPT: a PDPT-entry
    // cache hit leaves the PD entry only.
    assert_eq!(
        walk_refs(&mut w, &os, thp_region),
        (1, Some(PageSize::Size2M))
    );
    assert_eq!(w.pwc_stats[0].hits, 1);
    // Unmapped address: the walk stops at the first non-present entry.
    let (n, found) = walk_refs(
        &mut cfg.schemes.radix.walker(),
        &os,
        VirtAddr(0x10_0000_0000),
    );
    assert!(found.is_none() && n >= 1);
}

#[test]
fn five_level_cold_walk_reads_five_entries() {
    let cfg = small(&["schemes.radix.levels=5"]);
    let mut os = os_for(&cfg);
    let pid = os.spawn().unwrap();
    let va = os.mmap(pid, 4096, MapKind::Anon).unwrap();
    os.fault(pid, va).unwrap();
    assert_eq!(
        walk_refs(&mut cfg.schemes.radix.walker(), &os, va),
        (5, Some(PageSize::Size4K))
    );
}

/// Per-set true-LRU reference model.
struct LruModel {
    sets: Vec<VecDeque<u64>>,
    ways: usize,
    misses: u64,
}

impl LruModel {
    fn new(sets: usize, ways: usize) -> LruModel {
        LruModel {
            sets: vec![VecDeque::new(); sets],
            ways,
            misses: 0,
        }
    }
    fn access(&mut self, key: u64) {
        let n = self.sets.len();
        let set = &mut self.sets[(key as usize) % n];
        if let Some(pos) = set.iter().position(|&k| k == key) {
            set.remove(pos);
        } else {
            self.misses += 1;
            if set.len() == self.ways {
                set.pop_back();
            }
        }
        set.push_front(key);
    }
}

/// Fully associative LRU by stack distance: a reference misses iff more than `capacity`
/// distinct keys were touched since its previous use (or it was never used).
fn stack_distance_misses(trace: &[u64], capacity: usize) -> u64 {
    let mut stack: Vec<u64> = Vec::new();
    let mut misses = 0;
    for &k in trace {
        match stack.iter().rposition(|&s| s == k) {
            Some(pos) => {
                let distance = stack.len() - 1 - pos;
                if distance >= capacity {
                    misses += 1;
                }
                stack.remove(pos);
            }
            None => misses += 1,
        }
        stack.push(k);
    }
    misses
}

fn random_pages(seed: u64, n: usize, distinct: u64) -> Vec<u64> {
    let mut r = Rng::new(seed, 99);
    // Skewed so that there are both hits and misses at every geometry.
    (0..n)
        .map(|_| {
            if r.unit() < 0.5 {
                r.below(distinct / 8 + 1)
            } else {
                r.below(distinct)
            }
        })
        .collect()
}

fn tlb_cfg(entries: u32, ways: u32) -> TlbConfig {
    TlbConfig {
        entries,
        ways,
        latency: 1,
        replacement: Replacement::Lru,
        page_sizes: vec![PageSize::Size4K],
    }
}

#[test]
fn tlb_misses_match_lru_reference_models() {
    for (seed, (entries, ways)) in [(64, 4), (1536, 12), (32, 32), (16, 1)]
        .into_iter()
        .enumerate()
    {
        let trace = random_pages(seed as u64, 20_000, entries as u64 * 3);
        let mut tlb = Tlb::new(&tlb_cfg(entries, ways));
        let mut model = LruModel::new((entries / ways) as usize, ways as usize);
        for &p in &trace {
            let va = VirtAddr(p << 12);
            if tlb.lookup(va, 0).is_none() {
                tlb.insert(va, 0, xlat::addr::Pfn(p), PageSize::Size4K);
            }
            model.access(p);
        }
        assert_eq!(
            tlb.stats().misses,
            model.misses,
            "{entries} entries {ways} ways"
        );
        if ways == entries {
            assert_eq!(
                tlb.stats().misses,
                stack_distance_misses(&trace, entries as usize)
            );
        }
    }
}

#[test]
fn cache_misses_match_lru_reference_models() {
    for (seed, (size, ways)) in [(32768u64, 8u32), (4096, 64), (65536, 16)]
        .into_iter()
        .enumerate()
    {
        let sets = (size / 64 / ways as u64) as usize;
        let trace = random_pages(seed as u64 + 10, 30_000, size / 64 * 3);
        let mut cache = Cache::new(&CacheConfig {
            size,
            ways,
            latency: 1,
            replacement: Replacement::Lru,
            mshrs: None,
            addressing: Default::default(),
        });
        let mut model = LruModel::new(sets, ways as usize);
        for &line in &trace {
            cache.access(line, MemKind::DATA, false);
            model.access(line);
        }
        let misses = cache.stats().by_kind[0].misses;
        assert_eq!(misses, model.misses, "{size} B {ways} ways");
        if sets == 1 {
            assert_eq!(misses, stack_distance_misses(&trace, ways as usize));
        }
    }
}

#[test]
fn thp_maps_2m_when_contiguity_exists_and_falls_back_when_not() {
    let cfg = small(&["os.thp=always"]);
    let mut os = os_for(&cfg);
    let pid = os.spawn().unwrap();
    let region = os.mmap(pid, 64 << 20, MapKind::Anon).unwrap();
    assert_eq!(os.fault(pid, region).unwrap().1, PageSize::Size2M);
    // Take every remaining block of order >= 9, then give back one 2 MiB block broken into
    // small pieces: free memory exists but no 2 MiB of it is contiguous.
    let mut held = Vec::new();
    while let Some(b) = os.buddy.alloc(9) {
        held.push(b);
    }
    let broken = held.pop().unwrap();
    os.buddy.free(broken, 9);
    assert!(os.buddy.alloc_at(broken, 0));
    assert!(!os.buddy.has_free_block(9));
    let next = VirtAddr(region.0 + (2 << 20));
    assert_eq!(os.fault(pid, next).unwrap().1, PageSize::Size4K);
    assert_eq!(os.stats.faults.thp_fallbacks, 1);
    // Having a 4 KiB page inside, that 2 MiB range stays 4 KiB even once contiguity returns.
    os.buddy.free(held.pop().unwrap(), 9);
    assert_eq!(
        os.fault(pid, VirtAddr(next.0 + 4096)).unwrap().1,
        PageSize::Size4K
    );
    assert_eq!(
        os.fault(pid, VirtAddr(region.0 + (4 << 20))).unwrap().1,
        PageSize::Size2M
    );
}

#[test]
fn munmap_with_shootdown_leaves_no_stale_translation() {
    for shootdown in [true, false] {
        let mut sim = Simulation::new(small(&["sim.verify=true"])).unwrap();
        let pid = 0;
        let va = sim
            .address_spaces()
            .mmap(pid, 1 << 20, MapKind::Anon)
            .unwrap();
        let rec = xlat::trace::Record {
            vaddr: va,
            pid,
            size: 8,
            ..Default::default()
        };
        sim.step(&rec).unwrap();
        let gone = sim.address_spaces().munmap(pid, va, 1 << 20).unwrap();
        assert_eq!(gone.len(), 1);
        if shootdown {
            sim.shootdown(pid, &gone);
        }
        let e = sim.step(&rec).unwrap_err().to_string();
        if shootdown {
            // The TLB entry is gone, the walk finds nothing, the OS finds no VMA.
            assert!(e.contains("segmentation fault"), "{e}");
        } else {
            // Without the shootdown the TLB serves a stale translation, and verify catches it.
            assert!(e.contains("translation check failed"), "{e}");
        }
    }
}

#[test]
fn verify_passes_on_gups_and_stream() {
    for w in ["gups", "stream"] {
        let name = format!("workload.name={w}");
        let cfg = small(&["sim.verify=true", &name, "workload.references=300000"]);
        let stats = Simulation::new(cfg)
            .unwrap()
            .run(&mut |_, _| Ok(()))
            .unwrap();
        assert_eq!(stats.workload, w);
        assert_eq!(stats.verify.translations_checked, 300_000, "{w}");
        assert_eq!(stats.core.stats.memory_refs, 300_000, "{w}");
    }
}

#[test]
fn same_config_and_seed_give_identical_stats() {
    let a = Simulation::new(small(&["sim.epoch_instructions=100000"]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    let b = Simulation::new(small(&["sim.epoch_instructions=100000"]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert_eq!(a.to_json(), b.to_json());
    assert!(!a.epochs.is_empty());
    // GUPS walks fill the L2 with page-table blocks (Utopia Fig 3), sampled every epoch.
    assert!(a
        .epochs
        .iter()
        .all(|e| e.l2_translation_fraction > 0.0 && e.l2_translation_fraction < 1.0));
    let c = Simulation::new(small(&["seed=2"]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert_ne!(a.summary.cycles, c.summary.cycles);
}

#[test]
fn perfect_tlb_never_walks_and_is_faster() {
    let radix = Simulation::new(small(&[]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    let perfect = Simulation::new(small(&["scheme=perfect-tlb"]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert_eq!(perfect.summary.walks, 0);
    assert!(radix.summary.walks > 0);
    assert_eq!(radix.summary.faults, perfect.summary.faults);
    assert!(perfect.summary.cycles < radix.summary.cycles);
}

#[test]
fn warmup_resets_statistics() {
    let full = Simulation::new(small(&[]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    let warm = Simulation::new(small(&["sim.warmup_instructions=400000"]))
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert!(warm.summary.instructions < full.summary.instructions);
    assert!(warm.summary.walks < full.summary.walks);
    assert!(warm.summary.cycles < full.summary.cycles);
}

#[test]
fn missing_trace_is_a_clear_error() {
    let e = xlat::run::resolve(
        "baseline-radix",
        &[],
        Some(std::path::Path::new("/no/such.xtr")),
    )
    .and_then(|c| Simulation::new(c).map(|_| ()))
    .unwrap_err()
    .to_string();
    assert!(e.contains("/no/such.xtr"), "{e}");
}

#[test]
fn hugetlb_1g_backs_gups_with_1g_pages() {
    let cfg = small(&[
        "workload.table_bytes=1073741824",
        "workload.hugetlb_1g=true",
        "sim.verify=true",
    ]);
    let stats = Simulation::new(cfg)
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert_eq!(stats.os.faults.mapped_1g, 1);
    assert_eq!(stats.os.faults.mapped_4k, 0);
    // One 1 GiB page fits every TLB: after the first walk, no more.
    assert_eq!(stats.summary.walks, 1);
}

#[test]
fn os_hugetlb_1g_backs_every_large_region_of_any_workload() {
    // STREAM's three 1.5 GiB arrays: one 1 GiB page each, the remaining 512 MiB in 2 MiB pages.
    let cfg = small(&[
        "workload.name=stream",
        "workload.array_bytes=1610612736",
        "workload.references=30000",
        "os.physmem.bytes=8589934592",
        "os.hugetlb_1g=true",
        "sim.verify=true",
    ]);
    let stats = Simulation::new(cfg)
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert_eq!(stats.os.faults.mapped_1g, 3);
    assert_eq!(stats.os.faults.mapped_2m, 3 * 256);
    assert_eq!(stats.os.faults.mapped_4k, 0);
}

#[test]
fn booted_memory_has_the_requested_fragmentation() {
    for target in [0.0, 0.4, 0.7] {
        let cfg = small(&[
            &format!("os.physmem.fragmentation={target}"),
            "workload.references=1000",
        ]);
        let stats = Simulation::new(cfg)
            .unwrap()
            .run(&mut |_, _| Ok(()))
            .unwrap();
        let fmfi = stats.os.physmem.fmfi_initial;
        assert!(
            (fmfi - target).abs() <= 0.05,
            "target {target}, measured {fmfi}"
        );
    }
}

#[test]
fn replaying_a_recorded_workload_gives_identical_results() {
    use xlat::trace::native::XtrWriter;
    let gen_cfg = small(&["workload.populate=false", "workload.references=100000"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gups.xtr");
    // Record: the generator's records, written to a trace.
    let mut os = os_for(&gen_cfg);
    let mut source = xlat::workload::build(&gen_cfg.workload, &mut os, gen_cfg.seed).unwrap();
    let mut meta = serde_json::Map::new();
    meta.insert("workload".into(), "gups".into());
    let mut w = XtrWriter::create(&path, meta).unwrap();
    let mut buf = Vec::with_capacity(1000);
    loop {
        source.fill(&mut buf).unwrap();
        if buf.is_empty() {
            break;
        }
        w.write_all(&buf).unwrap();
    }
    assert_eq!(w.finish().unwrap(), 100_000);
    // Replay it (demand paging over the whole address space) and compare with the generator.
    let trace_cfg = xlat::run::resolve("baseline-radix", &small_overrides(), Some(&path)).unwrap();
    let from_trace = Simulation::new(trace_cfg)
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    let from_gen = Simulation::new(gen_cfg)
        .unwrap()
        .run(&mut |_, _| Ok(()))
        .unwrap();
    assert_eq!(from_trace.workload, "trace");
    assert_eq!(
        serde_json::to_string(&from_trace.summary).unwrap(),
        serde_json::to_string(&from_gen.summary).unwrap()
    );
    assert!(from_trace.summary.faults > 0);
}

fn small_overrides() -> Vec<String> {
    vec![
        "os.physmem.bytes=2147483648".into(),
        "os.physmem.fragmentation=0.0".into(),
    ]
}

#[test]
fn workload_catalog_lists_defaults_and_footprints() {
    let all = xlat::run::workloads().unwrap();
    let gups = all.iter().find(|w| w.name == "gups").unwrap();
    assert!(
        gups.defaults.contains("table_bytes = 4294967296"),
        "{}",
        gups.defaults
    );
    assert!(gups.footprint_bytes >= 4 << 30);
    assert!(all
        .iter()
        .all(|w| w.footprint_bytes > 0 && !w.description.is_empty()));
}

#[test]
fn recorded_trace_carries_workload_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.xtr");
    let cfg = small(&["workload.references=5000"]);
    let recorded = xlat::run::record(&cfg, &out, false, &mut |_, _| Ok(())).unwrap();
    // gups has no set-up: nothing to leave out.
    assert_eq!(
        recorded,
        Recorded {
            records: 5000,
            setup_records: 0,
            setup_included: false
        }
    );
    let r = xlat::trace::native::XtrReader::open(&out).unwrap();
    assert_eq!(r.meta().records, Some(5000));
    assert_eq!(r.meta().meta["workload"], "gups");
    assert_eq!(r.meta().meta["parameters"]["table_bytes"], 67108864);
    assert_eq!(r.meta().meta["setup_records"], 0);
    assert_eq!(r.roi(), Roi::At(0));
}

/// Every record of `path`, a native trace.
/// Run `trace` on `baseline-radix` with 2 GiB of unfragmented memory, every translation
/// verified.
fn run_trace(trace: &std::path::Path) -> xlat::stats::Stats {
    let ov = [
        "os.physmem.bytes=2147483648".to_string(),
        "os.physmem.fragmentation=0.0".to_string(),
        "sim.verify=true".to_string(),
    ];
    let cfg = xlat::run::resolve("baseline-radix", &ov, Some(trace)).unwrap();
    xlat::run::run(cfg, None, &mut |_, _| Ok(())).unwrap()
}

fn trace_records(path: &std::path::Path) -> Vec<Record> {
    let mut r = xlat::trace::native::XtrReader::open(path).unwrap();
    std::iter::from_fn(|| r.next_record().unwrap()).collect()
}

/// `trace record` of a workload with a set-up writes its region of interest, the
/// `workload.references` records a run measures, unless asked to include the set-up; then the
/// trace says where the region begins and a run of it fast-forwards there, once, as a run of
/// the workload does. A run of the region alone fast-forwards through nothing.
#[test]
fn recording_leaves_the_set_up_out_unless_asked_and_runs_of_either_trace_measure_the_region() {
    const REFS: u64 = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let ov: Vec<String> = [
        "workload.name=pr",
        "workload.scale=12",
        "workload.references=20000",
        "os.physmem.bytes=2147483648",
        "os.physmem.fragmentation=0.0",
    ]
    .map(String::from)
    .to_vec();
    let cfg = SimConfig::load("baseline-radix", &ov).unwrap();
    // What the generator emits, as a run of the workload reads it.
    let mut os = xlat::sim::boot_os(&cfg).unwrap();
    let mut source = xlat::workload::build(&cfg.workload, os.as_mut(), cfg.seed).unwrap();
    let all = common::all_records(source.as_mut());
    let Roi::At(setup) = source.roi() else {
        panic!("pr reached no region of interest")
    };
    assert_eq!(setup, 1 << 12, "pr's set-up: one store per vertex");
    assert_eq!(all.len() as u64, setup + REFS);

    let roi_only = dir.path().join("roi.xtr");
    let recorded = xlat::run::record(&cfg, &roi_only, false, &mut |_, _| Ok(())).unwrap();
    assert_eq!(
        recorded,
        Recorded {
            records: REFS,
            setup_records: setup,
            setup_included: false
        }
    );
    assert_eq!(trace_records(&roi_only), all[setup as usize..]);
    let r = xlat::trace::native::XtrReader::open(&roi_only).unwrap();
    assert_eq!(r.roi(), Roi::At(0));
    assert_eq!(r.meta().setup_skipped(), Some(setup));
    assert_eq!(r.meta().meta["setup_included"], false);

    let with_setup = dir.path().join("all.xtr");
    let recorded = xlat::run::record(&cfg, &with_setup, true, &mut |_, _| Ok(())).unwrap();
    assert_eq!(
        recorded,
        Recorded {
            records: setup + REFS,
            setup_records: setup,
            setup_included: true
        }
    );
    assert_eq!(trace_records(&with_setup), all);
    let r = xlat::trace::native::XtrReader::open(&with_setup).unwrap();
    assert_eq!(r.roi(), Roi::At(setup));
    assert_eq!(r.meta().setup_skipped(), None);

    // `trace inspect` says both.
    let s = xlat::trace::inspect(&roi_only).unwrap();
    assert_eq!(
        (s.records, s.roi_start, s.setup_skipped),
        (REFS, 0, Some(setup))
    );
    let s = xlat::trace::inspect(&with_setup).unwrap();
    assert_eq!(
        (s.records, s.roi_start, s.setup_skipped),
        (setup + REFS, setup, None)
    );

    // A conversion to .xtr keeps the start of the region.
    let converted = dir.path().join("converted.xtr");
    xlat::trace::convert(&with_setup, &converted).unwrap();
    let r = xlat::trace::native::XtrReader::open(&converted).unwrap();
    assert_eq!(r.roi(), Roi::At(setup));

    let s = run_trace(&roi_only);
    assert_eq!(s.fast_forward.records, 0);
    assert_eq!(s.core.stats.memory_refs, REFS);
    for trace in [&with_setup, &converted] {
        let s = run_trace(trace);
        assert_eq!(s.fast_forward.records, setup);
        assert!(s.fast_forward.reached_roi);
        assert_eq!(s.core.stats.memory_refs, REFS);
    }
}

/// A trace simulates the same in every format that carries it: a native trace converted to
/// xz-compressed ChampSim (which keeps load-to-load dependences) gives identical statistics,
/// with every translation verified against the OS's ground truth.
#[test]
fn champsim_and_lackey_traces_simulate_like_the_native_trace() {
    let dir = tempfile::tempdir().unwrap();
    let xtr = dir.path().join("s.xtr");
    let cfg = small(&[
        "workload.name=gups",
        "workload.references=30000",
        "sim.verify=true",
    ]);
    assert_eq!(
        xlat::run::record(&cfg, &xtr, false, &mut |_, _| Ok(()))
            .unwrap()
            .records,
        30_000
    );
    let champsim = dir.path().join("s.champsimtrace.xz");
    let lackey = dir.path().join("s.lackey.gz");
    xlat::trace::convert(&xtr, &champsim).unwrap();
    xlat::trace::convert(&champsim, &lackey).unwrap();

    let run = |trace: &std::path::Path| {
        serde_json::from_str::<serde_json::Value>(&run_trace(trace).to_json()).unwrap()
    };
    let (a, b, c) = (run(&xtr), run(&champsim), run(&lackey));
    assert_eq!(a["verify"]["translations_checked"], 30_000);
    assert_eq!(a["summary"], b["summary"]);
    // gups has no dependences, so lackey (which drops them) simulates the same too.
    assert_eq!(a["summary"], c["summary"]);
}

#[test]
fn page_faults_are_precise_exceptions_that_never_overlap() {
    // First-touch GUPS: random updates, each to a new page at first. An out-of-order window
    // would overlap the handlers of neighbouring faults; a precise exception drains the ROB
    // first and refetches after, so the run lasts at least as long as all handlers together.
    for scheme in ["radix", "perfect-tlb", "ecpt"] {
        let cfg = SimConfig::load(
            if scheme == "ecpt" {
                "ecpt"
            } else {
                "baseline-radix"
            },
            &[
                format!("scheme={scheme}"),
                "workload.name=gups".into(),
                "workload.table_bytes=268435456".into(),
                "workload.populate=false".into(),
                "workload.references=20000".into(),
            ],
        )
        .unwrap();
        let stats = Simulation::new(cfg)
            .unwrap()
            .run(&mut |_, _| Ok(()))
            .unwrap();
        let f = &stats.os.faults;
        assert!(f.minor > 5_000, "{scheme}: {} faults", f.minor);
        assert!(
            stats.summary.cycles >= f.cycles,
            "{scheme}: {} cycles for {} fault cycles",
            stats.summary.cycles,
            f.cycles
        );
    }
}
