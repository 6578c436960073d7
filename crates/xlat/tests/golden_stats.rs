//! The engine's results do not drift: for the four Phase-1 schemes, every built-in workload at a
//! fixed seed and size gives the statistics recorded in `tests/golden/stats.txt`.
//!
//! Each line there is `scheme workload hash`, the hash being FNV-1a over the run's flattened
//! statistics (`path=value` lines, sorted). Statistics that were added after the file was
//! recorded are left out by [`ADDED_SINCE_RECORDED`], so a new counter does not hide a changed
//! old one. A change that is meant to alter results sets `xlat::MODEL_EPOCH` to its date (run
//! ids hash it, so no sweep resumes on the earlier model's runs), re-records the file with
//! `XLAT_BLESS=1 cargo test --test golden_stats` and says why in its commit. The file records
//! the epoch it was recorded under: re-recording moved stats under an unchanged epoch is refused.

// Only the stats flattener is needed here.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;

use std::collections::BTreeMap;
use std::fmt::Write as _;

const SCHEMES: &[&str] = &["baseline-radix", "perfect-tlb", "ecpt", "mehpt"];
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/stats.txt");
const REFS: u64 = 20_000;

/// Stats paths (prefixes) that did not exist when the golden file was recorded.
const ADDED_SINCE_RECORDED: &[&str] = &[
    // Engine v2: the multi-core system's core count and cross-core shootdowns.
    "system.",
    // Fast-forward to the region of interest (off here: the recorded runs are all detail).
    "fast_forward.",
    "summary.fast_forwarded_instructions=",
    // Bounded memory-level parallelism: load/store-queue stalls and L1D MSHR waits.
    "core.lq_stall_cycles=",
    "core.sq_stall_cycles=",
    "cache.l1d_mshr.",
    // Hashed page tables' rehash work charged to faults (0 for every other organisation; its
    // effect on hashed runs shows in their cycles).
    "os.faults.pt_rehash_cycles=",
    // Cycles cores waited at barriers (multi-core runs only: 0 here).
    "core.barrier_wait_cycles=",
    // The run's timing mode (`sim.timing`): "detailed" here.
    "timing=",
    // Cycles loads and stores waited for a port (`core.load_ports`; unbounded here: 0).
    "core.port_wait_cycles=",
    // Accesses that waited for a walk in flight (`mmu.wait_for_walks`; off here: 0).
    "mmu.walk_waits=",
    "mmu.walk_wait_cycles=",
];

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn run_hash(scheme: &str, workload: &str) -> u64 {
    let ov = vec![
        format!("workload.name={workload}"),
        format!("workload.references={REFS}"),
        "workload.populate=false".to_string(),
        "os.physmem.bytes=4294967296".to_string(),
        "seed=7".to_string(),
        // Recorded before fast-forwarding existed: every record in detail.
        "sim.fast_forward=0".to_string(),
    ];
    let cfg = xlat::SimConfig::load(scheme, &ov).unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let stats = xlat::Simulation::new(cfg)
        .and_then(|mut s| s.run(&mut |_, _| Ok(())))
        .unwrap_or_else(|e| panic!("{scheme} {workload}: {e}"));
    let tree: serde_json::Value = serde_json::from_str(&stats.to_json()).unwrap();
    let mut lines = sim::flatten(&tree);
    lines.retain(|l| !ADDED_SINCE_RECORDED.iter().any(|p| l.starts_with(p)));
    lines.sort();
    fnv1a(&lines.join("\n"))
}

/// Every run's hash, two schemes at a time (the runs are independent and deterministic).
fn current() -> BTreeMap<(String, String), u64> {
    std::thread::scope(|s| {
        let halves: Vec<_> = SCHEMES
            .chunks(SCHEMES.len().div_ceil(2))
            .map(|schemes| {
                s.spawn(move || {
                    let mut part = Vec::new();
                    for scheme in schemes {
                        for (workload, _) in xlat::workload::WORKLOADS {
                            let key = (scheme.to_string(), workload.to_string());
                            part.push((key, run_hash(scheme, workload)));
                        }
                    }
                    part
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("a run panicked"))
            .collect()
    })
}

/// The recorded file: the model epoch it was recorded under (its `# model-epoch` line; none in
/// files recorded before there was one) and each run's hash.
struct Recorded {
    epoch: Option<String>,
    hashes: BTreeMap<(String, String), u64>,
}

fn recorded() -> Recorded {
    let text = std::fs::read_to_string(GOLDEN).expect("tests/golden/stats.txt");
    let mut epoch = None;
    let mut hashes = BTreeMap::new();
    for line in text.lines() {
        if let Some(e) = line.strip_prefix("# model-epoch ") {
            epoch = Some(e.trim().to_string());
        } else if !line.starts_with('#') {
            let f: Vec<&str> = line.split_whitespace().collect();
            let hash = u64::from_str_radix(f[2], 16).expect("a hexadecimal hash");
            hashes.insert((f[0].to_string(), f[1].to_string()), hash);
        }
    }
    Recorded { epoch, hashes }
}

/// The runs whose hash differs from the recorded one (or that no longer run).
fn moved(now: &BTreeMap<(String, String), u64>, recorded: &Recorded) -> Vec<String> {
    let mut differ = Vec::new();
    for ((scheme, workload), &want) in &recorded.hashes {
        match now.get(&(scheme.clone(), workload.clone())) {
            Some(&got) if got == want => {}
            Some(&got) => differ.push(format!("{scheme} {workload}: {got:016x} != {want:016x}")),
            None => differ.push(format!("{scheme} {workload}: no longer runs")),
        }
    }
    differ
}

#[test]
fn phase1_schemes_give_the_recorded_stats_on_every_workload() {
    let now = current();
    let before = recorded();
    let differ = moved(&now, &before);
    if std::env::var_os("XLAT_BLESS").is_some() {
        assert!(
            differ.is_empty() || before.epoch.as_deref() != Some(xlat::MODEL_EPOCH),
            "stats moved under the same model epoch {}: set xlat::MODEL_EPOCH (lib.rs) to this \
             change's date first, so that no sweep resumes on runs of the model before it:\n{}",
            xlat::MODEL_EPOCH,
            differ.join("\n")
        );
        let mut text =
            String::from("# scheme workload fnv1a-of-flattened-stats (golden_stats.rs)\n");
        writeln!(text, "# model-epoch {}", xlat::MODEL_EPOCH).unwrap();
        for ((s, w), h) in &now {
            writeln!(text, "{s} {w} {h:016x}").unwrap();
        }
        std::fs::create_dir_all(std::path::Path::new(GOLDEN).parent().unwrap()).unwrap();
        std::fs::write(GOLDEN, text).unwrap();
        return;
    }
    assert_eq!(
        before.hashes.len(),
        now.len(),
        "golden file and workload list differ"
    );
    assert!(differ.is_empty(), "stats changed:\n{}", differ.join("\n"));
    assert_eq!(
        before.epoch.as_deref(),
        Some(xlat::MODEL_EPOCH),
        "tests/golden/stats.txt was recorded under another model epoch: re-record it \
         (XLAT_BLESS=1 cargo test --test golden_stats)"
    );
}
