//! The `champsim` preset replays ChampSim-format traces: its DTLB and STLB miss counts equal
//! those of an independent set-associative LRU model of ChampSim's TLBs, and its 5-level
//! walks go through the PSCL5..PSCL2 paging-structure caches.

use xlat::addr::VirtAddr;
use xlat::trace::champsim::ChampSimWriter;
use xlat::trace::compress::Compression;
use xlat::trace::{Op, Record};

/// A set-associative LRU array of page numbers, written for this test: set = page mod sets,
/// each set a list ordered most recently used first.
struct LruTlb {
    sets: Vec<Vec<u64>>,
    ways: usize,
}

impl LruTlb {
    fn new(sets: usize, ways: usize) -> LruTlb {
        LruTlb {
            sets: vec![Vec::new(); sets],
            ways,
        }
    }

    /// Look `page` up; a hit moves it to the front.
    fn hit(&mut self, page: u64) -> bool {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(page % n) as usize];
        match set.iter().position(|&p| p == page) {
            Some(i) => {
                set.remove(i);
                set.insert(0, page);
                true
            }
            None => false,
        }
    }

    /// Insert `page` (known absent) as most recently used, evicting the least recently used.
    fn fill(&mut self, page: u64) {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(page % n) as usize];
        set.insert(0, page);
        set.truncate(self.ways);
    }
}

/// ChampSim's DTLB (16 sets x 4 ways) in front of its STLB (128 sets x 12 ways): an STLB hit
/// fills the DTLB; a miss in both walks and fills both. Returns (DTLB misses, STLB misses).
fn reference_misses(records: &[Record]) -> (u64, u64) {
    let mut dtlb = LruTlb::new(16, 4);
    let mut stlb = LruTlb::new(128, 12);
    let (mut l1, mut l2) = (0, 0);
    for r in records {
        let page = r.vaddr.0 >> 12;
        if dtlb.hit(page) {
            continue;
        }
        l1 += 1;
        if !stlb.hit(page) {
            l2 += 1;
            stlb.fill(page);
        }
        dtlb.fill(page);
    }
    (l1, l2)
}

/// A deterministic mix of what stresses a TLB: random pages over 64 MiB, strided runs,
/// and re-visits of a small hot set, loads and stores, a few non-memory instructions between.
fn records(n: usize) -> Vec<Record> {
    let base = 0x7f12_3400_0000u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let r = next();
            let offset = match (i / 2000) % 3 {
                0 => r % (64 << 20),                             // random over 16 Ki pages
                1 => (i as u64 * 4160) % (48 << 20),             // strided, a page and a line
                _ => (r % 96) * 4096 + (r >> 32) % 4096 / 8 * 8, // a hot set of 96 pages
            };
            Record {
                vaddr: VirtAddr(base + (offset & !7)),
                op: if r >> 60 < 4 { Op::Store } else { Op::Load },
                size: 8,
                core: 0,
                pid: 0,
                instr_delta: (r >> 40) as u32 % 4,
                dep: 0,
                flags: 0,
            }
        })
        .collect()
}

fn write_trace(path: &std::path::Path, recs: &[Record]) {
    let mut w = ChampSimWriter::create(path, Compression::Xz).unwrap();
    for r in recs {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
}

fn run(path: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let ov: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let cfg = xlat::run::resolve("champsim", &ov, Some(path)).unwrap();
    let stats = xlat::run::run(cfg, None, &mut |_, _| Ok(())).unwrap();
    serde_json::from_str(&stats.to_json()).unwrap()
}

#[test]
fn champsim_tlb_misses_match_an_lru_reference_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mix.champsimtrace.xz");
    let recs = records(60_000);
    write_trace(&path, &recs);
    let s = run(&path, &["sim.verify=true"]);
    let (want_l1, want_l2) = reference_misses(&recs);
    let got_l1 = s["mmu"]["l1tlb"]["misses"].as_u64().unwrap();
    let got_l2 = s["mmu"]["l2tlb"]["misses"].as_u64().unwrap();
    assert_eq!((got_l1, got_l2), (want_l1, want_l2));
    // The trace is built to miss: thousands of STLB misses, not a handful.
    assert!(
        want_l2 > 10_000 && want_l1 > want_l2 + 5_000,
        "{want_l1} {want_l2}"
    );
    assert_eq!(s["mmu"]["l1tlb"]["accesses"].as_u64().unwrap(), 60_000);
    assert_eq!(
        s["verify"]["translations_checked"].as_u64().unwrap(),
        60_000
    );
    // Every first touch faults (pages mapped on first touch), at ChampSim's 200 cycles.
    let pages: std::collections::BTreeSet<u64> = recs.iter().map(|r| r.vaddr.0 >> 12).collect();
    assert_eq!(
        s["os"]["faults"]["minor"].as_u64().unwrap(),
        pages.len() as u64
    );
    // 5-level walks through all four paging-structure caches, PSCL5 included.
    let pwc = &s["mmu"]["pwc"];
    for level in ["pml5", "pml4", "pdpt", "pd"] {
        let probes = pwc[level]["hits"].as_u64().unwrap() + pwc[level]["misses"].as_u64().unwrap();
        assert!(probes > 0, "{level}: {pwc}");
    }
}

/// Touch each page of a 16 MiB array once, then `n` loads at random lines of it: independent
/// misses, every page already mapped.
fn random_loads(n: usize) -> Vec<Record> {
    let base = 0x5500_0000_0000u64;
    let pages = 4096u64;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let touch = (0..pages).map(|p| base + p * 4096);
    let random = (0..n).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        base + (x % (pages * 4096)) / 64 * 64
    });
    loads_after(touch.chain(random), 1)
}

#[test]
fn champsim_bounds_bind_on_independent_misses() {
    // Independent loads missing the caches: with ChampSim's 16 L1D MSHRs some wait for one;
    // with as many MSHRs and queue entries as ROB entries none does.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.champsimtrace.xz");
    write_trace(&path, &random_loads(8000));
    let bounded = run(&path, &[]);
    let unbounded = run(
        &path,
        &[
            "cache.l1d.mshrs=1024",
            "core.lq_size=352",
            "core.sq_size=352",
        ],
    );
    let waits = |s: &serde_json::Value| s["cache"]["l1d_mshr"]["waits"].as_u64().unwrap();
    assert!(waits(&bounded) > 1000, "{}", waits(&bounded));
    assert_eq!(waits(&unbounded), 0);
    // The run is not measurably faster: 8,000 random lines of 16 MiB are bound by DRAM's
    // banks and by the walks of 4,096 pages past the STLB as much as by the MSHRs (the
    // cycles differed by 35 of 504,500, and by 150 the other way once first-touch walks
    // read their new entries). So the check is that the bound no longer binds, not a margin.
}

/// An instruction with several memory operands counts once, in the engine as in `inspect`:
/// a ChampSim trace of 1,000 memory instructions, a quarter of them a load and a store (as
/// `add [mem], reg` is) and some with two loads, and 300 without memory operands, is 1,300
/// instructions of 1,000 + 250 + 100 memory operands.
#[test]
fn instructions_with_several_operands_count_once() {
    use xlat::trace::champsim::{Instr, INSTR_BYTES};
    let base = 0x6600_0000_0000u64;
    let mut bytes = Vec::with_capacity(1300 * INSTR_BYTES);
    for i in 0..1000u64 {
        let a = base + (i * 7 % 512) * 4096 + i % 64 * 8;
        let mut ins = Instr {
            ip: 0x40_0000 + 4 * i,
            source_memory: [a, 0, 0, 0],
            ..Instr::default()
        };
        if i % 4 == 0 {
            ins.destination_memory[0] = a;
        }
        if i % 10 == 5 {
            ins.source_memory[1] = a + 4096;
        }
        bytes.extend_from_slice(&ins.encode());
        if i % 10 < 3 {
            let plain = Instr {
                ip: 0x50_0000 + 4 * i,
                ..Instr::default()
            };
            bytes.extend_from_slice(&plain.encode());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("operands.champsimtrace");
    std::fs::write(&path, &bytes).unwrap();

    let summary = xlat::trace::inspect(&path).unwrap();
    assert_eq!(summary.records, 1350);
    assert_eq!(summary.memory_operands, 1350);
    assert_eq!((summary.loads, summary.stores), (1100, 250));
    assert_eq!(summary.instructions, 1300);
    assert_eq!(summary.multi_operand_instructions, 250 + 100);

    let s = run(&path, &["sim.verify=true"]);
    assert_eq!(s["core"]["instructions"].as_u64().unwrap(), 1300);
    assert_eq!(s["core"]["memory_refs"].as_u64().unwrap(), 1350);
    assert_eq!(s["core"]["stores"].as_u64().unwrap(), 250);
    // Every operand is translated on its own.
    assert_eq!(s["mmu"]["l1tlb"]["accesses"].as_u64().unwrap(), 1350);
    assert_eq!(s["verify"]["translations_checked"].as_u64().unwrap(), 1350);
}

/// GUPS on demand paging under the `champsim` preset with `fault_model`, every translation
/// checked against the OS (`sim.verify`): the run's stats.
fn gups_faults(fault_model: &str) -> serde_json::Value {
    let ov = vec![
        "workload.name=gups".to_string(),
        "workload.references=20000".to_string(),
        "workload.table_bytes=268435456".to_string(),
        "workload.populate=false".to_string(),
        "os.physmem.bytes=4294967296".to_string(),
        "sim.verify=true".to_string(),
        "sim.fast_forward=0".to_string(),
        format!("os.fault_model={fault_model}"),
    ];
    let cfg = xlat::SimConfig::load("champsim", &ov).unwrap();
    let stats = xlat::Simulation::new(cfg)
        .and_then(|mut s| s.run(&mut |_, _| Ok(())))
        .unwrap();
    serde_json::from_str(&stats.to_json()).unwrap()
}

#[test]
fn walk_penalty_faults_lengthen_the_walk_without_a_second_walk() {
    let trap = gups_faults("trap");
    let penalty = gups_faults("walk_penalty");
    let n = |v: &serde_json::Value, path: &[&str]| {
        path.iter()
            .fold(v, |v, k| &v[k])
            .as_u64()
            .unwrap_or_else(|| panic!("{path:?}"))
    };
    let faults = n(&penalty, &["mmu", "faults"]);
    assert!(faults > 5_000, "{faults}");
    // Every first touch is one walk: no second walk after the fault.
    assert_eq!(
        n(&penalty, &["mmu", "walks"]),
        n(&penalty, &["mmu", "l2_misses"])
    );
    // A trap walks again.
    assert_eq!(
        n(&trap, &["mmu", "walks"]),
        n(&trap, &["mmu", "l2_misses"]) + n(&trap, &["mmu", "faults"])
    );
    // Each fault costs 200 cycles for the page and 200 per new entry frame (at least the
    // leaf's), all of it in the walk's latency: past-L1 translation time includes it.
    let fault_cycles = n(&penalty, &["os", "faults", "cycles"]);
    assert!(fault_cycles >= 400 * faults, "{fault_cycles}");
    assert_eq!(
        n(&penalty, &["os", "faults", "pt_page_cycles"]),
        200 * n(&penalty, &["os", "faults", "pt_pages"])
    );
    assert!(
        n(&penalty, &["mmu", "translation_cycles"])
            >= fault_cycles + n(&penalty, &["mmu", "walk_cycles"])
    );
    // No drain, no refetch: first touches overlap, so the run is much shorter.
    let cycles = |v| n(v, &["summary", "cycles"]);
    assert!(
        cycles(&penalty) * 3 < cycles(&trap),
        "{} vs {}",
        cycles(&penalty),
        cycles(&trap)
    );
}

#[test]
fn the_preset_issues_two_loads_a_cycle_as_champsims_lq_width() {
    // Independent loads cycling over 16 KiB (L1D hits once warm): ChampSim's core sends at
    // most `lq_width` = 2 loads a cycle to the L1D (src/ooo_cpu.cc, operate_lsq), so IPC
    // is 2 where dispatch alone (4 wide) would allow 4.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loop16k.champsimtrace.xz");
    write_trace(
        &path,
        &loads((0..200_000u64).map(|i| 0x40_0000_0000 + (i * 8) % (16 << 10))),
    );
    let window = [
        "sim.warmup_instructions=100000",
        "sim.max_instructions=200000",
    ];
    let ipc = |extra: &[&str]| {
        let s = run(&path, &[&window[..], extra].concat());
        s["summary"]["ipc"].as_f64().unwrap()
    };
    let ported = ipc(&[]);
    assert!((1.99..=2.0).contains(&ported), "{ported}");
    let unbounded = ipc(&["core.load_ports=0"]);
    assert!((3.98..=4.0).contains(&unbounded), "{unbounded}");
}

#[test]
fn a_first_touch_walk_reads_the_entry_it_made_at_its_new_frame() {
    // Sequential loads over 2 MiB: every walk is a first touch. ChampSim's walker makes the
    // missing leaf entry's page (`get_pte_pa`) and reads the entry there, a frame no cache
    // holds: about one DRAM read a walk. In the x86 layout the failed walk reads where the
    // entry goes, eight pages' entries to a line: about one in eight reaches DRAM. (Under
    // ChampSim's placement the walk also reads, after the PD PWC's hit, the previous page's
    // leaf frame at this page's index: a new line every eighth page. So about 1.125.)
    let dir = tempfile::tempdir().unwrap();
    let path = sequential_loads_over_2mib(dir.path());
    let dram_reads_per_walk = |extra: &[&str]| {
        let s = run(&path, extra);
        let walks = s["mmu"]["walks"].as_f64().unwrap();
        assert_eq!(walks, 512.0, "one walk a page");
        s["walk"]["refs"]["by_level"]["dram"].as_f64().unwrap() / walks
    };
    let champsim = dram_reads_per_walk(&[]);
    assert!((1.05..=1.2).contains(&champsim), "{champsim}");
    let x86 = dram_reads_per_walk(&["schemes.radix.placement=\"x86\""]);
    assert!(x86 < 0.3, "{x86}");
}

#[test]
fn loads_of_a_page_being_walked_wait_for_its_walk() {
    // Sequential loads over 2 MiB, every page a first touch: in ChampSim the loads after the
    // first to a page merge into the DTLB's MSHR for its walk and wait for its reply; the
    // preset's `mmu.wait_for_walks` makes them wait for it, and only those loads.
    let dir = tempfile::tempdir().unwrap();
    let path = sequential_loads_over_2mib(dir.path());
    let waiting = run(&path, &[]);
    let at_once = run(&path, &["mmu.wait_for_walks=false"]);
    let u = |s: &serde_json::Value, k: &str| s["mmu"][k].as_u64().unwrap();
    assert_eq!(u(&at_once, "walk_waits"), 0);
    assert_eq!(u(&at_once, "walk_wait_cycles"), 0);
    // Some loads of most pages are issued while the page's walk (its 400 fault cycles
    // included) is in flight; none waits longer than a walk takes.
    let (waits, cycles) = (u(&waiting, "walk_waits"), u(&waiting, "walk_wait_cycles"));
    assert!(waits > 512, "{waits}");
    let walk = (u(&waiting, "walk_cycles") + u(&waiting, "walker_queue_cycles") + 400 * 512)
        / u(&waiting, "walks");
    assert!(cycles / waits <= walk, "{} > {walk}", cycles / waits);
    let cycles_of = |s: &serde_json::Value| s["summary"]["cycles"].as_u64().unwrap();
    assert!(cycles_of(&waiting) > cycles_of(&at_once));
    // The walks themselves are the same walks.
    assert_eq!(u(&waiting, "walks"), u(&at_once, "walks"));
}

#[test]
fn after_a_pscl_hit_the_walk_reads_a_line_of_the_walk_that_filled_it() {
    // Two passes over 16K pages (64 MiB) in a scrambled order; the second, measured, pass
    // walks pages mapped by the first. ChampSim's walker, after a hit in a paging-structure
    // cache, reads at the frame of the walk that last filled that entry before reading the
    // level below (src/ptw.cc, handle_read): under its placement every walk with a PWC hit
    // reads exactly one line more than under x86's, and the caches see the same walks.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.champsimtrace.xz");
    let pages = 1u64 << 14;
    let page = |i: u64| (i * 7_919) % pages;
    let pass = (0..pages).map(|i| 0x60_0000_0000 + (page(i) << 12) + 8 * (i % 512));
    write_trace(&path, &loads(pass.clone().chain(pass)));
    let window = [
        "sim.warmup_instructions=16384",
        "sim.max_instructions=32768",
    ];
    let champsim = run(&path, &window);
    let x86 = run(
        &path,
        &[&window[..], &["schemes.radix.placement=\"x86\""]].concat(),
    );
    let walks = |s: &serde_json::Value| s["mmu"]["walks"].as_u64().unwrap();
    let reads = |s: &serde_json::Value| {
        let by_level = s["walk"]["refs"]["by_level"].as_object().unwrap();
        by_level.values().map(|v| v.as_u64().unwrap()).sum::<u64>()
    };
    let pwc_hits = |s: &serde_json::Value| {
        let pwc = s["mmu"]["pwc"].as_object().unwrap();
        pwc.values()
            .map(|v| v["hits"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(walks(&champsim), walks(&x86));
    assert!(walks(&champsim) > 10_000, "{}", walks(&champsim));
    assert_eq!(pwc_hits(&champsim), pwc_hits(&x86));
    assert_eq!(
        pwc_hits(&champsim),
        walks(&champsim),
        "every walk hits a PWC"
    );
    assert_eq!(reads(&champsim), reads(&x86) + pwc_hits(&champsim));
}

/// A trace of sequential 8-byte loads over 2 MiB (512 pages, each touched first by it), in
/// `dir`.
fn sequential_loads_over_2mib(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("seq.champsimtrace.xz");
    write_trace(
        &path,
        &loads((0..(2u64 << 20) / 8).map(|i| 0x50_0000_0000 + i * 8)),
    );
    path
}

/// Independent 8-byte loads at `addrs`, one instruction each.
fn loads(addrs: impl Iterator<Item = u64>) -> Vec<Record> {
    loads_after(addrs, 0)
}

/// Independent 8-byte loads at `addrs`, each after `instr_delta` other instructions.
fn loads_after(addrs: impl Iterator<Item = u64>, instr_delta: u32) -> Vec<Record> {
    addrs
        .map(|a| Record {
            vaddr: VirtAddr(a),
            op: Op::Load,
            size: 8,
            core: 0,
            pid: 0,
            instr_delta,
            dep: 0,
            flags: 0,
        })
        .collect()
}
