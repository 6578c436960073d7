//! A multi-programmed mix on a core per program: each program reads its own stream and runs on
//! its own clock, sharing only the LLC, DRAM, physical memory and the OS with the others; its
//! statistics are taken at its quota of references, and it keeps running (restarting its
//! stream) until every program has reached its own.

// Not every helper is needed here.
#[allow(dead_code)]
#[path = "common/sim.rs"]
mod sim;

use serde_json::Value;
use sim::{u, MIB};

/// A 12 KiB STREAM (three 4 KiB arrays): resident in the L1D once touched.
const TINY_STREAM: &str = "{name = \"stream\", array_bytes = 4096}";
/// A GUPS whose table misses the TLBs and the LLC on nearly every update.
fn gups(mib: u64) -> String {
    format!("{{name = \"gups\", table_bytes = {}}}", mib * MIB)
}

/// `members` (TOML tables) as a mix of `refs` references on `cores` cores.
fn mix(members: &[String], refs: u64, cores: u32, extra: &[&str]) -> xlat::SimConfig {
    let mut ov = vec![
        format!("workload.members=[{}]", members.join(", ")),
        format!("sim.cores={cores}"),
        "seed=11".to_string(),
        // Each member maps its memory as it says (by default up front, as alone below).
        "workload.populate=true".to_string(),
    ];
    ov.extend(extra.iter().map(|s| s.to_string()));
    sim::cfg("baseline-radix", "mix", refs, &ov)
}

/// `member` (a TOML table) alone on one core, with `refs` references, mapping its memory up
/// front unless it says otherwise.
fn solo(member: &str, refs: u64, extra: &[&str]) -> Value {
    let table: toml::Table = toml::from_str(&format!("m = {member}")).unwrap();
    let m = table["m"].as_table().unwrap();
    let mut ov = vec!["seed=11".to_string(), "workload.populate=true".to_string()];
    ov.extend(
        m.iter()
            .filter(|(k, _)| *k != "name")
            .map(|(k, v)| format!("workload.{k}={v}")),
    );
    ov.extend(extra.iter().map(|s| s.to_string()));
    sim::run(sim::cfg(
        "baseline-radix",
        m["name"].as_str().unwrap(),
        refs,
        &ov,
    ))
}

fn members(stats: &Value) -> &Vec<Value> {
    stats["mix"]["members"].as_array().expect("a mix section")
}

fn ipc(member: &Value) -> f64 {
    member["ipc"].as_f64().unwrap()
}

#[test]
fn members_on_four_cores_retire_at_their_own_pace() {
    let four = [
        gups(64),
        TINY_STREAM.to_string(),
        gups(32),
        "{name = \"stream\", array_bytes = 8388608}".to_string(),
    ];
    let stats = sim::run(mix(&four, 80_000, 4, &["sim.verify=true"]));
    let m = members(&stats);
    assert_eq!(m.len(), 4);
    for (i, member) in m.iter().enumerate() {
        assert_eq!(member["core_index"], i as u64);
        assert_eq!(member["pid"], i as u64);
        assert_eq!(member["quota"], 20_000);
        assert_eq!(member["reached_quota"], true);
        // Its own references to its quota, no more: the statistics are taken there.
        assert_eq!(u(member, "core.memory_refs"), 20_000, "member {i}");
        assert_eq!(u(member, "mmu.translations"), 20_000, "member {i}");
        assert_eq!(member["core"]["ipc"], member["ipc"]);
    }
    let names: Vec<&str> = m.iter().map(|m| m["workload"].as_str().unwrap()).collect();
    assert_eq!(names, ["gups", "stream", "gups", "stream"]);
    let ipcs: Vec<f64> = m.iter().map(ipc).collect();
    // The cache-resident STREAM runs several times faster than either GUPS; no two alike.
    assert!(ipcs[1] > 3.0 * ipcs[0].max(ipcs[2]), "{ipcs:?}");
    for i in 0..4 {
        for j in i + 1..4 {
            assert!((ipcs[i] - ipcs[j]).abs() > 0.01 * ipcs[i], "{ipcs:?}");
        }
    }
    // Every record translated correctly, those run past a quota included.
    assert!(u(&stats, "verify.translations_checked") >= 80_000);
}

#[test]
fn a_cache_resident_program_keeps_its_solo_ipc_beside_gups() {
    // Each program warms up for 20000 instructions (STREAM's first pass over its arrays,
    // 3072 instructions, brings them from DRAM: at the pace DRAM serves them beside GUPS).
    let refs = 60_000;
    let warmup = "sim.warmup_instructions=20000";
    let stats = sim::run(mix(
        &[gups(256), TINY_STREAM.to_string()],
        2 * refs,
        2,
        &["sim.warmup_instructions=40000"],
    ));
    let m = members(&stats);
    let alone = solo(TINY_STREAM, refs, &[warmup]);
    let alone_ipc = alone["summary"]["ipc"].as_f64().unwrap();
    let (gups_ipc, stream_ipc) = (ipc(&m[0]), ipc(&m[1]));
    // The same work as alone...
    assert_eq!(u(&m[1], "instructions"), u(&alone, "summary.instructions"));
    // ...at nearly the same pace: it shares only the LLC and DRAM with GUPS, and misses
    // neither once its 12 KiB are in its L1D.
    assert!(
        (stream_ipc - alone_ipc).abs() <= 0.1 * alone_ipc,
        "stream beside gups {stream_ipc:.3}, alone {alone_ipc:.3}"
    );
    assert!(stream_ipc > 5.0 * gups_ipc, "{stream_ipc} {gups_ipc}");
    // GUPS too runs about as fast as alone.
    let gups_alone = solo(&gups(256), refs, &[warmup])["summary"]["ipc"]
        .as_f64()
        .unwrap();
    assert!(
        (gups_ipc - gups_alone).abs() <= 0.1 * gups_alone,
        "gups beside stream {gups_ipc:.3}, alone {gups_alone:.3}"
    );
}

#[test]
fn a_program_that_ends_early_restarts_and_is_measured_at_its_quota() {
    // STREAM's own stream has 1000 references; its quota is 6000: it runs its stream six
    // times to its quota, and goes on while GUPS has not reached its own. Its pages are
    // mapped by its first touches (GUPS's up front).
    let short = "{name = \"stream\", array_bytes = 4096, references = 1000, populate = false}";
    let stats = sim::run(mix(
        &[short.to_string(), gups(64)],
        12_000,
        2,
        &["sim.verify=true"],
    ));
    let m = members(&stats);
    assert!(m.iter().all(|m| m["reached_quota"] == true));
    assert_eq!(u(&m[0], "core.memory_refs"), 6000);
    assert!(u(&m[0], "restarts") >= 5, "{}", m[0]);
    let core0 = &stats["cores"][0]["core"];
    assert!(
        u(core0, "memory_refs") > 6000,
        "it kept running after its quota: {core0}"
    );
    assert!(u(core0, "instructions") > u(&m[0], "instructions"));
    // Its restarts touch the pages it has: its three arrays' pages fault once, as alone.
    let once = solo(short, 1000, &[]);
    assert_eq!(u(&once, "os.faults.minor"), 3);
    assert_eq!(u(&stats, "os.faults.minor"), 3);
    // Six times its own stream, to the record, at its quota.
    assert_eq!(
        u(&m[0], "instructions"),
        6 * u(&once, "summary.instructions")
    );
    // GUPS's run sets the end: the last program to reach its quota.
    assert!(u(&stats, "summary.cycles") >= u(&m[1], "cycles"));
}

#[test]
fn each_program_warms_up_for_its_share() {
    let warmup = 20_000;
    let stats = sim::run(mix(
        &[TINY_STREAM.to_string(), gups(64)],
        20_000,
        2,
        &[&format!("sim.warmup_instructions={}", 2 * warmup)],
    ));
    let alone = solo(TINY_STREAM, 10_000, &[]);
    let m = members(&stats);
    // Its measured instructions are those from its own warm-up's end to its quota.
    let whole = u(&alone, "summary.instructions");
    let measured = u(&m[0], "instructions");
    assert!(
        measured + warmup <= whole && whole < measured + warmup + 64,
        "{measured} + {warmup} vs {whole}"
    );
    assert!(u(&m[0], "core.memory_refs") < 10_000);
}

#[test]
fn same_config_same_stats() {
    let members = [gups(32), TINY_STREAM.to_string(), gups(16)];
    let run = || {
        xlat::Simulation::new(mix(&members, 30_000, 3, &[]))
            .unwrap()
            .run(&mut |_, _| Ok(()))
            .unwrap()
            .to_json()
    };
    assert_eq!(run(), run());
}

#[test]
fn more_programs_than_cores_but_one_is_rejected() {
    let three = format!(
        "workload.members=[{}, {}, {}]",
        gups(16),
        TINY_STREAM,
        gups(8)
    );
    let load = |cores: u32| {
        xlat::SimConfig::load(
            "baseline-radix",
            &[
                "workload.name=mix".into(),
                three.clone(),
                format!("sim.cores={cores}"),
            ],
        )
    };
    let e = load(2).unwrap_err().to_string();
    assert!(
        e.contains("sim.cores") && e.contains("workload.members"),
        "{e}"
    );
    assert!(load(1).is_ok() && load(3).is_ok() && load(8).is_ok());
}

#[test]
fn one_core_time_slices_the_mix_as_before() {
    // Members share core 0 by quantum: no per-program section, and each program runs as far
    // as its slices took it.
    let stats = sim::run(mix(
        &[gups(16), TINY_STREAM.to_string()],
        20_000,
        1,
        &["workload.quantum=1000"],
    ));
    assert!(stats.get("mix").is_none());
    assert!(stats.get("cores").is_none());
    assert_eq!(u(&stats, "core.memory_refs"), 20_000);
}
