//! RMM (Redundant Memory Mappings) end to end: correct translations on every built-in
//! workload, and the range TLB doing its job on GUPS.

use xlat::Simulation;

const GIB: u64 = 1 << 30;

/// `workload` on `preset` with `refs` references, demand-paged, on 4 GiB of unfragmented
/// memory, plus `extra` overrides.
fn cfg(preset: &str, workload: &str, refs: u64, extra: &[String]) -> xlat::SimConfig {
    let mut ov = vec![
        format!("workload.name={workload}"),
        format!("workload.references={refs}"),
        "workload.populate=false".to_string(),
        "os.physmem.fragmentation=0.0".to_string(),
        format!("os.physmem.bytes={}", 4 * GIB),
    ];
    ov.extend(extra.iter().cloned());
    xlat::SimConfig::load(preset, &ov).unwrap_or_else(|e| panic!("{preset} {workload}: {e}"))
}

fn run(cfg: xlat::SimConfig) -> serde_json::Value {
    let name = format!("{} {}", cfg.scheme, cfg.workload.name());
    let stats = Simulation::new(cfg)
        .and_then(|mut s| s.run(&mut |_, _| Ok(())))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&stats.to_json()).unwrap()
}

fn u(v: &serde_json::Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {path}"))
}

#[test]
fn rmm_on_gups_serves_most_l2_misses_from_ranges() {
    let extra = [format!("workload.table_bytes={}", GIB)];
    let radix = run(cfg("baseline-radix", "gups", 200_000, &extra));
    let rmm = run(cfg("rmm", "gups", 200_000, &extra));
    eprintln!(
        "walks radix {} rmm {}; cycles radix {} rmm {}; range_tlb {}",
        u(&radix, "summary.walks"),
        u(&rmm, "summary.walks"),
        u(&radix, "summary.cycles"),
        u(&rmm, "summary.cycles"),
        rmm["mmu"]["range_tlb"]
    );
    eprintln!("{}\n{}", rmm["mmu"], rmm["os"]);
}
