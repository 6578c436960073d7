//! Runs one configuration and prints the IPC of the run and of each core (and, for a mix on
//! several cores, of each program at its quota): what comparing a mix with its programs alone
//! needs.
//!
//! ```text
//! cargo run --release -p xlat --example mix_ipc -- PRESET WORKLOAD [KEY=VALUE ...]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [preset, workload, overrides @ ..] = args.as_slice() else {
        eprintln!("usage: mix_ipc PRESET WORKLOAD [KEY=VALUE ...]");
        return ExitCode::from(2);
    };
    // The name first: the overrides after it set that workload's keys.
    let mut ov = vec![format!("workload.name={workload}")];
    ov.extend_from_slice(overrides);
    let run = || -> xlat::Result<xlat::Stats> {
        let cfg = xlat::SimConfig::load(preset, &ov)?;
        xlat::Simulation::new(cfg)?.run(&mut |_, _| Ok(()))
    };
    let stats = match run() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tree: serde_json::Value = serde_json::from_str(&stats.to_json()).expect("stats are JSON");
    let s = &tree["summary"];
    println!(
        "all: instructions={} cycles={} ipc={:.3} dram_row_hit_rate={:.3}",
        s["instructions"],
        s["cycles"],
        s["ipc"].as_f64().unwrap_or(0.0),
        s["dram_row_hit_rate"].as_f64().unwrap_or(0.0)
    );
    for (i, c) in tree["cores"].as_array().into_iter().flatten().enumerate() {
        let c = &c["core"];
        println!(
            "core {i}: instructions={} cycles={} ipc={:.3}",
            c["instructions"],
            c["cycles"],
            c["ipc"].as_f64().unwrap_or(0.0)
        );
    }
    for m in tree["mix"]["members"].as_array().into_iter().flatten() {
        println!(
            "member {} (pid {}, core {}): instructions={} cycles={} ipc={:.3} restarts={}",
            m["workload"],
            m["pid"],
            m["core_index"],
            m["instructions"],
            m["cycles"],
            m["ipc"].as_f64().unwrap_or(0.0),
            m["restarts"]
        );
    }
    ExitCode::SUCCESS
}
