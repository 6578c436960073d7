//! Checks that hold for every built-in workload, whichever it is: the catalog is the list, so a
//! new workload is covered the moment it is registered.

mod common;

use xlat::trace::Record;
use xlat::Simulation;

/// The L2 TLB reach of `baseline-radix` with 4 KiB pages (1536 entries x 4 KiB).
const L2_TLB_REACH: u64 = 1536 * 4096;

fn names() -> Vec<&'static str> {
    xlat::workload::WORKLOADS.iter().map(|(n, _)| *n).collect()
}

/// `name` at its defaults, `refs` references, demand-paged (populating GiBs of defaults would
/// dominate the test), on unfragmented memory.
fn cfg(name: &str, refs: u64, extra: &[&str]) -> xlat::SimConfig {
    let mut ov = vec![
        format!("workload.name={name}"),
        format!("workload.references={refs}"),
        "workload.populate=false".to_string(),
        "os.physmem.fragmentation=0.0".to_string(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    xlat::SimConfig::load("baseline-radix", &ov).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn records(name: &str, refs: u64) -> Vec<Record> {
    let c = cfg(name, refs, &[]);
    let mut os = xlat::sim::boot_os(&c).unwrap();
    let mut source = xlat::workload::build(&c.workload, os.as_mut(), c.seed).unwrap();
    common::kernel_records(source.as_mut())
}

#[test]
fn every_workload_stresses_translation_at_its_defaults() {
    for w in xlat::run::workloads().unwrap() {
        assert!(
            w.footprint_bytes >= 4 * L2_TLB_REACH,
            "{}: footprint {} B is within 4x the L2 TLB reach",
            w.name,
            w.footprint_bytes
        );
    }
}

#[test]
fn every_workload_is_deterministic_and_emits_its_budget() {
    for name in names() {
        let a = records(name, 20_000);
        assert_eq!(a.len(), 20_000, "{name}: budget not reached");
        assert_eq!(a, records(name, 20_000), "{name}: record stream differs");
        assert!(
            a.iter().any(|r| r.instr_delta > 0),
            "{name}: no instructions between accesses"
        );
        let pages: std::collections::HashSet<u64> = a.iter().map(|r| r.vaddr.0 >> 12).collect();
        assert!(pages.len() > 1, "{name}: touches a single page");
    }
}

#[test]
fn every_workload_translates_correctly() {
    for name in names() {
        let stats = Simulation::new(cfg(name, 50_000, &["sim.verify=true"]))
            .unwrap()
            .run(&mut |_, _| Ok(()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // The measured references, and the fast-forward's replay of the set-up's end.
        assert_eq!(
            stats.verify.translations_checked,
            50_000 + stats.fast_forward.warmed_records,
            "{name}"
        );
        assert!(
            stats.summary.faults > 0,
            "{name}: demand paging never faulted"
        );
    }
}
