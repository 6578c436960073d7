//! `pom-tlb` in the engine: every translation verified on every built-in workload, the L3
//! level's accounting adds up, and on a table beyond the L2 TLB's reach the POM-TLB takes
//! most page walks off the radix baseline.

use serde_json::Value;
use xlat::{SimConfig, Simulation};

/// `preset` on `workload` at `refs` references, demand-paged, unfragmented 4 GiB.
fn cfg(preset: &str, workload: &str, refs: u64, extra: &[&str]) -> SimConfig {
    let mut ov: Vec<String> = vec![
        format!("workload.name={workload}"),
        format!("workload.references={refs}"),
        "workload.populate=false".into(),
        "os.physmem.fragmentation=0.0".into(),
        "os.physmem.bytes=4294967296".into(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    SimConfig::load(preset, &ov).unwrap_or_else(|e| panic!("{preset} {workload}: {e}"))
}

fn run(c: SimConfig) -> (xlat::sim::Stats, Value) {
    let stats = Simulation::new(c)
        .and_then(|mut s| s.run(&mut |_, _| Ok(())))
        .unwrap_or_else(|e| panic!("{e}"));
    let json = serde_json::from_str(&stats.to_json()).unwrap();
    (stats, json)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn pom_tlb_translates_every_workload_correctly() {
    for (name, _) in xlat::workload::WORKLOADS {
        // Everything in detail (no fast-forward): the identities below tie counters to state
        // that a fast-forward's warming would have filled before the counters started.
        let (stats, j) = run(cfg(
            "pom-tlb",
            name,
            20_000,
            &["sim.verify=true", "sim.fast_forward=0"],
        ));
        let refs = stats.core.stats.memory_refs;
        assert!(refs >= 20_000, "{name}");
        assert_eq!(stats.verify.translations_checked, refs, "{name}");
        let (mmu, pom) = (&j["mmu"], &j["mmu"]["pom_tlb"]);
        // Every L2 TLB miss looks the POM-TLB up; only its misses walk (a fault walks twice).
        assert_eq!(u(&pom["lookups"]), u(&mmu["l2_misses"]), "{name}");
        assert_eq!(
            u(&pom["hits"]) + u(&pom["misses"]),
            u(&pom["lookups"]),
            "{name}"
        );
        assert_eq!(
            u(&mmu["walks"]),
            u(&pom["misses"]) + u(&mmu["faults"]),
            "{name}"
        );
        // Every successful walk fills it; its lines are reads and writes of kind `pomtlb`.
        assert_eq!(
            u(&pom["fills"]),
            u(&pom["valid_entries"]) + u(&pom["evictions"]) + u(&pom["invalidations"]),
            "{name}"
        );
        let by_level: u64 = ["l1", "l2", "llc", "dram"]
            .iter()
            .map(|l| u(&pom["by_level"][l]))
            .sum();
        assert_eq!(by_level, u(&pom["line_reads"]), "{name}");
        assert!(u(&pom["fills"]) > 0, "{name}: nothing filled");
        assert!(
            j["cache"]["l2"]["by_kind"]["pomtlb"].is_object(),
            "{name}: no POM-TLB line went through L2"
        );
        assert!(
            j["cache"]["l1d"]["by_kind"].get("pomtlb").is_none(),
            "{name}: POM-TLB lines enter at L2"
        );
    }
}

/// GUPS on a 64 MiB table: ten times the L2 TLB's 6 MiB reach, a quarter of the POM-TLB's
/// 256 MiB. Each page is touched about a dozen times, so after its first walk the POM-TLB
/// serves its L2 TLB misses.
#[test]
fn pom_tlb_serves_most_l2_misses_of_a_table_beyond_l2_reach() {
    let extra = ["workload.table_bytes=67108864", "sim.verify=true"];
    let (radix, _) = run(cfg("baseline-radix", "gups", 400_000, &extra));
    let (pom, j) = run(cfg("pom-tlb", "gups", 400_000, &extra));
    let p = &j["mmu"]["pom_tlb"];
    let (hits, lookups) = (u(&p["hits"]), u(&p["lookups"]));
    assert!(
        hits * 10 >= lookups * 8,
        "the POM-TLB served {hits} of {lookups} L2 TLB misses"
    );
    // Same reference stream, same L2 TLB misses; the POM-TLB hits are walks radix does.
    assert_eq!(pom.summary.l2tlb_mpki, radix.summary.l2tlb_mpki);
    assert!(
        pom.summary.walks * 2 < radix.summary.walks,
        "walks: pom-tlb {} vs radix {}",
        pom.summary.walks,
        radix.summary.walks
    );
    assert_eq!(radix.summary.walks, pom.summary.walks + hits);
}

#[test]
fn pom_tlb_config_errors_name_the_key() {
    let bad = [
        ("schemes.pom_tlb.entries=1000", "schemes.pom_tlb.entries"),
        ("schemes.pom_tlb.ways=0", "schemes.pom_tlb.ways"),
        ("schemes.pom_tlb.ways=6", "schemes.pom_tlb.ways"),
        (
            "schemes.pom_tlb.entry_bytes=12",
            "schemes.pom_tlb.entry_bytes",
        ),
        (
            "schemes.pom_tlb.entry_bytes=128",
            "schemes.pom_tlb.entry_bytes",
        ),
        (
            "schemes.pom_tlb.entries=268435456",
            "schemes.pom_tlb.entries",
        ),
        (
            "schemes.pom_tlb.enter_at=\"l4\"",
            "schemes.pom_tlb.enter_at",
        ),
    ];
    for (set, key) in bad {
        let e = SimConfig::load("pom-tlb", &[set.to_string()]).unwrap_err();
        assert!(e.to_string().contains(key), "{set}: {e}");
    }
    // Valid on its own, but larger than the 4 MiB of physical memory: an error at build time.
    let c = SimConfig::load(
        "pom-tlb",
        &[
            "schemes.pom_tlb.entries=1048576".into(),
            "os.physmem.bytes=4194304".into(),
            "os.physmem.fragmentation=0.0".into(),
            "workload.table_bytes=1048576".into(),
            "workload.populate=false".into(),
        ],
    )
    .unwrap();
    let e = Simulation::new(c).err().expect("the array cannot fit");
    assert!(
        e.to_string().contains("schemes.pom_tlb.entries") && e.to_string().contains("physmem"),
        "{e}"
    );
    // The section's keys may be given one at a time; the rest keep their defaults.
    let c = SimConfig::load("baseline-radix", &["schemes.pom_tlb.ways=16".into()]).unwrap();
    assert_eq!(
        (c.schemes.pom_tlb.ways, c.schemes.pom_tlb.entries),
        (16, 65536)
    );
}

/// With huge pages the array holds 2 MiB and 1 GiB entries beside 4 KiB ones (never
/// splintered), lookups read the set of every size in use, and every translation is right.
#[test]
fn pom_tlb_holds_huge_pages_and_probes_each_size_in_use() {
    // THP: 2 MiB pages of the table beside the 4 KiB pages of the rest.
    let (stats, j) = run(cfg(
        "pom-tlb",
        "gups",
        100_000,
        &["sim.verify=true", "os.thp=always"],
    ));
    assert_eq!(stats.verify.translations_checked, 100_000);
    let p = &j["mmu"]["pom_tlb"];
    assert!(u(&p["hits"]) > 0, "{p}");
    // Once both sizes are in the array, a lookup reads two sets (four lines), not one.
    assert!(u(&p["line_reads"]) > 2 * u(&p["lookups"]), "{p}");
    // A 1 GiB page, with the on-chip 1 GiB arrays removed: the L1 and L2 TLBs hold 4 KiB
    // pieces of it and miss on every new piece; the POM-TLB holds the whole page in one entry.
    let (stats, j) = run(cfg(
        "pom-tlb",
        "gups",
        100_000,
        &[
            "sim.verify=true",
            "workload.table_bytes=1073741824",
            "os.hugetlb_1g=true",
            "mmu.l1tlb.1g.entries=0",
            "mmu.l2tlb.1g.entries=0",
        ],
    ));
    assert_eq!(stats.verify.translations_checked, 100_000);
    let p = &j["mmu"]["pom_tlb"];
    assert_eq!((u(&p["fills"]), u(&p["valid_entries"])), (1, 1), "{p}");
    assert_eq!(u(&p["hits"]) + 1, u(&p["lookups"]), "{p}");
    assert!(u(&p["lookups"]) > 10_000, "{p}");
}

/// The POM-TLB hits of a running simulation.
fn pom_hits(sim: &Simulation) -> u64 {
    let j: Value = serde_json::from_str(&sim.stats().to_json()).unwrap();
    u(&j["mmu"]["pom_tlb"]["hits"])
}

/// An unmapped page's POM-TLB entry outlives its on-chip TLB entries: only the shootdown
/// keeps a later access from translating through it.
#[test]
fn shootdown_drops_the_pom_tlb_entry() {
    use xlat::addr::VirtAddr;
    use xlat::os::MapKind;
    use xlat::trace::Record;
    for shootdown in [true, false] {
        let mut sim = Simulation::new(cfg("pom-tlb", "gups", 1000, &["sim.verify=true"])).unwrap();
        let pid = 0;
        let spaces = sim.address_spaces();
        let victim = spaces.mmap(pid, 1 << 20, MapKind::Anon).unwrap();
        let other = spaces.mmap(pid, 16 << 20, MapKind::Anon).unwrap();
        let at = |va: VirtAddr| Record {
            vaddr: va,
            pid,
            size: 8,
            ..Default::default()
        };
        sim.step(&at(victim)).unwrap();
        // 4096 other pages push the victim out of the L1 and L2 TLBs (128 sets of 12 ways),
        // not out of the POM-TLB (one page per set of 8192).
        for i in 0..4096u64 {
            sim.step(&at(VirtAddr(other.0 + (i << 12)))).unwrap();
        }
        let before = pom_hits(&sim);
        let gone = sim.address_spaces().munmap(pid, victim, 1 << 20).unwrap();
        if shootdown {
            sim.shootdown(pid, &gone);
        }
        let e = sim.step(&at(victim)).unwrap_err().to_string();
        if shootdown {
            // The entry is gone, the walk finds nothing, the OS finds no VMA.
            assert!(e.contains("segmentation fault"), "{e}");
        } else {
            // The POM-TLB served the stale translation, and verify caught it.
            assert!(e.contains("translation check failed"), "{e}");
            assert_eq!(pom_hits(&sim), before + 1);
        }
    }
}

/// Records handed out from a vector, in batches.
struct Records(std::vec::IntoIter<xlat::trace::Record>);

impl xlat::trace::RecordSource for Records {
    fn fill(&mut self, buf: &mut Vec<xlat::trace::Record>) -> xlat::Result<()> {
        buf.clear();
        buf.extend(self.0.by_ref().take(buf.capacity().max(1)));
        Ok(())
    }
}

#[test]
fn the_cores_share_one_pom_tlb_so_one_cores_walks_serve_anothers_misses() {
    use xlat::addr::VirtAddr;
    use xlat::trace::{Op, Record};
    const PAGES: u64 = 2000;
    let c = SimConfig::load(
        "pom-tlb",
        &[
            "os.physmem.bytes=1073741824".into(),
            "os.physmem.fragmentation=0.0".into(),
            "sim.verify=true".into(),
            "sim.cores=2".into(),
        ],
    )
    .unwrap();
    // Two threads of one process touch the same pages, each once, side by side.
    let mut sim = Simulation::with_source(c, |os| {
        let pid = os.spawn()?;
        let va = os.mmap(pid, PAGES * 4096, xlat::os::MapKind::Anon)?;
        let records: Vec<Record> = (0..2u8)
            .flat_map(|core| {
                (0..PAGES).map(move |page| Record {
                    vaddr: VirtAddr(va.0 + page * 4096),
                    op: Op::Load,
                    size: 8,
                    core,
                    pid,
                    instr_delta: 1,
                    ..Default::default()
                })
            })
            .collect();
        Ok(Box::new(Records(records.into_iter())) as Box<dyn xlat::trace::RecordSource>)
    })
    .unwrap();
    let stats = sim.run(&mut |_, _| Ok(())).unwrap();
    let j: Value = serde_json::from_str(&stats.to_json()).unwrap();
    let cores = [&j["cores"][0]["mmu"], &j["cores"][1]["mmu"]];
    let sum = |key: &str| cores.iter().map(|c| u(&c[key])).sum::<u64>();
    // Whichever core touches a page first faults and walks it twice (before and after the
    // fault) and enters it in the array; the other core's L2 TLB misses on it and finds it
    // there. With an array per core, the second core would walk too and nothing would hit.
    assert_eq!(sum("l2_misses"), 2 * PAGES);
    assert_eq!(sum("faults"), PAGES);
    assert_eq!(sum("walks"), 2 * PAGES);
    let pom = &j["mmu"]["pom_tlb"];
    assert_eq!(u(&pom["lookups"]), 2 * PAGES);
    assert_eq!(u(&pom["fills"]), PAGES);
    assert_eq!(u(&pom["hits"]), PAGES);
    assert_eq!(u(&pom["valid_entries"]), PAGES);
    // The array is the system's, not a core's: it is counted once, in the totals.
    assert!(cores.iter().all(|c| c.get("pom_tlb").is_none()));
    assert_eq!(stats.verify.translations_checked, 2 * PAGES);
}
