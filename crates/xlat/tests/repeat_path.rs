//! The run loop's short cut for records that repeat the page of the L1 TLB's last hit and the
//! line of the L1D's (`System::step_repeats`) changes no result: with `sim.verify` every
//! record takes the whole MMU and hierarchy instead, and every scheme gives the same stats
//! either way, on workloads with streams (runs of records per line), random updates (a
//! store after its load), pointer chasing and two programs interleaved on one core, and with
//! warm-up and epoch boundaries inside runs of one line's records.

// Not every helper there is needed here.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;

use std::collections::BTreeSet;

/// The stats tree as sorted `path=value` lines, without the `verify` subtree (whether the
/// check ran, and how many translations it checked).
fn flat(v: &serde_json::Value) -> BTreeSet<String> {
    let mut lines = sim::flatten(v);
    lines.retain(|l| !l.starts_with("verify."));
    lines.into_iter().collect()
}

#[test]
fn every_scheme_gives_the_same_stats_with_each_record_through_the_whole_mmu() {
    let presets = [
        "baseline-radix",
        "perfect-tlb",
        "ecpt",
        "mehpt",
        "utopia",
        "rmm",
        "pom-tlb",
        "virt-4k4k",
        "dual-direct",
    ];
    for preset in presets {
        for workload in ["stream", "gups", "btree", "mix"] {
            let stats = |verify: bool| {
                let mut extra = vec![format!("sim.verify={verify}"), "seed=3".to_string()];
                if workload == "gups" {
                    // A table eager paging (RMM) can map in 4 GiB.
                    extra.push(format!("workload.table_bytes={}", 256 * sim::MIB));
                }
                if workload == "mix" {
                    // Room for eager paging (RMM) to back every member's VMAs.
                    extra.push(format!("os.physmem.bytes={}", 32 * sim::GIB));
                }
                sim::run(sim::cfg(preset, workload, 30_000, &extra))
            };
            let (fast, whole) = (stats(false), stats(true));
            assert!(
                sim::u(&fast, "core.memory_refs") > 0,
                "{preset} {workload}: no references"
            );
            let (fast, whole) = (flat(&fast), flat(&whole));
            let differ: Vec<_> = whole.symmetric_difference(&fast).take(10).collect();
            assert!(differ.is_empty(), "{preset} {workload}: {differ:#?}");
        }
    }
}

#[test]
fn runs_of_repeats_stop_at_the_end_of_warm_up_and_at_each_epoch() {
    // Odd instruction counts, so that the events fall inside runs of one line's records.
    let events = [
        "sim.warmup_instructions=7001".to_string(),
        "sim.epoch_instructions=5003".to_string(),
    ];
    for preset in ["baseline-radix", "utopia"] {
        for workload in ["stream", "btree"] {
            let stats = |verify: bool| {
                let mut extra = events.to_vec();
                extra.push(format!("sim.verify={verify}"));
                flat(&sim::run(sim::cfg(preset, workload, 40_000, &extra)))
            };
            let (fast, whole) = (stats(false), stats(true));
            assert!(
                fast.iter().any(|l| l.starts_with("epochs[3]")),
                "{preset} {workload}: epochs sampled"
            );
            assert_eq!(fast, whole, "{preset} {workload}");
        }
    }
}
