//! The engine's reference-loop throughput on one workload, as a plain process to time from
//! outside (set-up included) against another program or build:
//!
//! ```text
//! cargo run --release -p xlat --example bench -- PRESET WORKLOAD REFERENCES [KEY=VALUE ...]
//! ```
//!
//! Prints the workload, references, seconds of the loop and references per second.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [preset, workload, refs, overrides @ ..] = args.as_slice() else {
        eprintln!("usage: bench PRESET WORKLOAD REFERENCES [KEY=VALUE ...]");
        return ExitCode::from(2);
    };
    let Ok(refs) = refs.parse::<u64>() else {
        eprintln!("REFERENCES must be a number, got {refs}");
        return ExitCode::from(2);
    };
    match xlat::run::bench(preset, workload, refs, overrides) {
        Ok(r) => {
            #[cfg(feature = "dram-log")]
            xlat::mem::dram::log::flush();
            println!(
                "{} refs={} seconds={:.3} refs_per_s={:.3e} setup_seconds={:.3}",
                r.workload, r.references, r.seconds, r.refs_per_second, r.setup_seconds
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
