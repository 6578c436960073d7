//! The multi-core system: records run on the core they name, cores share the LLC, DRAM and the
//! OS but not their TLBs, shootdowns reach every core that ran the process, and results do
//! not depend on anything but the config and the records.

use xlat::addr::VirtAddr;
use xlat::os::MapKind;
use xlat::trace::{Op, Record, RecordSource};
use xlat::{SimConfig, Simulation, Stats};

/// Records handed out from a vector, in batches.
struct Records(std::vec::IntoIter<Record>);

impl RecordSource for Records {
    fn fill(&mut self, buf: &mut Vec<Record>) -> xlat::Result<()> {
        buf.clear();
        buf.extend(self.0.by_ref().take(buf.capacity().max(1)));
        Ok(())
    }
}

fn config(cores: u32) -> SimConfig {
    SimConfig::load(
        "baseline-radix",
        &[
            "os.physmem.bytes=1073741824".into(),
            "os.physmem.fragmentation=0.0".into(),
            "sim.verify=true".into(),
            format!("sim.cores={cores}"),
        ],
    )
    .unwrap()
}

/// A region of `pages` pages in process 0, and the simulation around it.
fn system(cores: u32, pages: u64, records: impl Fn(VirtAddr) -> Vec<Record>) -> Simulation {
    Simulation::with_source(config(cores), |os| {
        let pid = os.spawn()?;
        let va = os.mmap(pid, pages * 4096, MapKind::Anon)?;
        Ok(Box::new(Records(records(va).into_iter())) as Box<dyn RecordSource>)
    })
    .unwrap()
}

fn rec(va: VirtAddr, page: u64, core: u8) -> Record {
    Record {
        vaddr: VirtAddr(va.0 + page * 4096),
        op: Op::Load,
        size: 8,
        core,
        instr_delta: 3,
        ..Default::default()
    }
}

/// `n` accesses to pages chosen by a small LCG, on the cores `core_of` picks.
fn stream(va: VirtAddr, n: u64, core_of: impl Fn(u64) -> u8) -> Vec<Record> {
    let mut x = 12345u64;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            rec(va, (x >> 33) % 4096, core_of(i))
        })
        .collect()
}

fn run(mut sim: Simulation) -> Stats {
    sim.run(&mut |_, _| Ok(())).unwrap()
}

fn json(stats: &Stats) -> serde_json::Value {
    serde_json::from_str(&stats.to_json()).unwrap()
}

#[test]
fn records_run_on_the_core_they_name_and_totals_add_up() {
    let stats = run(system(4, 4096, |va| stream(va, 40_000, |i| (i % 3) as u8)));
    let j = json(&stats);
    assert_eq!(j["system"]["cores"], 4);
    let cores = j["cores"].as_array().unwrap();
    assert_eq!(cores.len(), 4);
    let instr: Vec<u64> = cores
        .iter()
        .map(|c| c["core"]["instructions"].as_u64().unwrap())
        .collect();
    // Cores 0-2 got a third of the records each (4 instructions per record); core 3 none.
    assert_eq!(instr[3], 0);
    assert!(instr[..3].iter().all(|&n| n > 50_000), "{instr:?}");
    assert_eq!(instr.iter().sum::<u64>(), stats.summary.instructions);
    let translations: u64 = cores
        .iter()
        .map(|c| c["mmu"]["translations"].as_u64().unwrap())
        .sum();
    assert_eq!(translations, j["mmu"]["translations"].as_u64().unwrap());
    assert_eq!(stats.verify.translations_checked, 40_000);
    // The slowest core sets the run's cycles.
    let slowest = cores
        .iter()
        .map(|c| c["core"]["cycles"].as_u64().unwrap())
        .max();
    assert_eq!(slowest, Some(stats.summary.cycles));
}

#[test]
fn idle_cores_change_nothing_for_a_core_that_runs_alone() {
    let one = run(system(1, 4096, |va| stream(va, 20_000, |_| 0)));
    let four = run(system(4, 4096, |va| stream(va, 20_000, |_| 0)));
    assert_eq!(one.summary.cycles, four.summary.cycles);
    assert_eq!(one.summary.walks, four.summary.walks);
    assert_eq!(
        serde_json::to_value(&one.cache.llc).unwrap(),
        serde_json::to_value(&four.cache.llc).unwrap()
    );
}

#[test]
fn cores_have_their_own_tlbs() {
    // The same pages on two cores: each core misses its own TLBs once per page.
    let stats = run(system(2, 64, |va| {
        (0..2u8)
            .flat_map(|core| (0..64).map(move |p| rec(va, p, core)))
            .collect()
    }));
    let j = json(&stats);
    for core in j["cores"].as_array().unwrap() {
        assert_eq!(core["mmu"]["l2_misses"], 64, "{core}");
    }
    assert_eq!(
        stats.summary.faults, 64,
        "the second core finds the pages mapped"
    );
}

#[test]
fn a_shootdown_reaches_every_core_that_ran_the_process() {
    let mut sim = system(2, 1, |va| vec![rec(va, 0, 0), rec(va, 0, 1)]);
    sim.run(&mut |_, _| Ok(())).unwrap();
    let vmas = sim.address_spaces().vmas(0).unwrap();
    let mapping = vmas.iter().find(|v| v.role == xlat::os::Region::Mmap);
    let region = mapping.unwrap().start.addr();
    let gone = sim.address_spaces().munmap(0, region, 4096).unwrap();
    sim.shootdown(0, &gone);
    let j = json(&sim.stats());
    assert_eq!(j["system"]["shootdown_ipis"], 1);
    assert_eq!(j["system"]["shootdowns_remote"], 1);
    for core in j["cores"].as_array().unwrap() {
        assert_eq!(core["mmu"]["shootdowns"], 1, "{core}");
    }
    // Core 1's TLB no longer holds the page: its access walks, finds nothing, and the OS
    // reports the unmapped address (not a stale translation caught by verify).
    let e = sim.step(&rec(region, 0, 1)).unwrap_err().to_string();
    assert!(e.contains("segmentation fault"), "{e}");
}

#[test]
fn same_seed_same_stats_whatever_the_interleaving() {
    let a = run(system(3, 4096, |va| stream(va, 30_000, |i| (i % 3) as u8)));
    let b = run(system(3, 4096, |va| stream(va, 30_000, |i| (i % 3) as u8)));
    assert_eq!(a.to_json(), b.to_json());
}

#[test]
fn core_count_is_validated() {
    for bad in ["sim.cores=0", "sim.cores=65"] {
        let e = SimConfig::load("baseline-radix", &[bad.to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("sim.cores"), "{bad}: {e}");
    }
}

/// Two threads of one process: thread 0 chases 300 pointers before a barrier, thread 1 makes
/// 3 independent loads; after it each makes 5 more. `flag`: the first record after the
/// barrier says so.
fn barrier_phases(va: VirtAddr, flag: bool, after: bool) -> Vec<Record> {
    let mut recs: Vec<Record> = (0..300)
        .map(|p| Record {
            dep: u32::from(p > 0),
            ..rec(va, p * 7 % 1024, 0)
        })
        .collect();
    recs.extend((0..3).map(|p| rec(va, 2000 + p, 1)));
    if after {
        let first = recs.len();
        recs.extend((0..5).map(|p| rec(va, 3000 + p, 1)));
        recs.extend((0..5).map(|p| rec(va, 3100 + p, 0)));
        if flag {
            recs[first].flags = Record::AFTER_BARRIER;
        }
    }
    recs
}

fn per_core(stats: &Stats, key: &str) -> Vec<u64> {
    json(stats)["cores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["core"][key].as_u64().unwrap())
        .collect()
}

#[test]
fn threads_meet_at_a_barrier() {
    // Where each core stands when every record before the barrier has run.
    let before = run(system(2, 4096, |va| barrier_phases(va, true, false)));
    let c = per_core(&before, "cycles");
    assert!(c[0] > 10 * c[1], "thread 0 has far more to do: {c:?}");

    let stats = run(system(2, 4096, |va| barrier_phases(va, true, true)));
    let j = json(&stats);
    assert_eq!(j["system"]["barriers"], 1);
    // Core 1 idles from the end of its own work until core 0's has retired.
    assert_eq!(j["system"]["barrier_wait_cycles"], c[0] - c[1]);
    let waits: Vec<u64> = j["cores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|core| core["core"]["barrier_wait_cycles"].as_u64().unwrap())
        .collect();
    assert_eq!(waits, [0, c[0] - c[1]]);
    assert_eq!(j["core"]["barrier_wait_cycles"], c[0] - c[1]);
    // So its records after the barrier start after core 0's work before it: it ends later
    // than core 0 did at the barrier, by at least its 5 loads' dispatch.
    let after = per_core(&stats, "cycles");
    assert!(after[1] > c[0], "{after:?} {c:?}");
    assert_eq!(
        per_core(&stats, "instructions"),
        [(300 + 5) * 4, (3 + 5) * 4]
    );

    // Deterministic.
    let again = run(system(2, 4096, |va| barrier_phases(va, true, true)));
    assert_eq!(stats.to_json(), again.to_json());

    // Without the flag nobody waits: core 1 runs its later loads right after its first.
    let free = run(system(2, 4096, |va| barrier_phases(va, false, true)));
    let j = json(&free);
    assert_eq!(j["system"]["barriers"], 0);
    assert_eq!(j["system"]["barrier_wait_cycles"], 0);
    assert!(per_core(&free, "cycles")[1] < c[0]);
}

#[test]
fn one_core_ignores_barriers() {
    let flagged = run(system(1, 4096, |va| barrier_phases(va, true, true)));
    let plain = run(system(1, 4096, |va| barrier_phases(va, false, true)));
    assert_eq!(flagged.to_json(), plain.to_json());
    assert_eq!(json(&flagged)["system"]["barriers"], 0);
}
