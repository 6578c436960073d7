//! Runs a trace file through the simulator and prints the summary, or writes a gups trace to
//! have one: a whole-process yardstick for trace reading (e.g. against `xz -dc TRACE`).
//!
//! ```text
//! cargo run --release -p xlat --example run_trace -- PRESET TRACE [KEY=VALUE ...]
//! cargo run --release -p xlat --example run_trace -- --make-gups REFERENCES OUT [KEY=VALUE ...]
//! ```
//!
//! `--make-gups` writes the gups workload of baseline-radix (plus the overrides) in the format
//! OUT's name asks for (`x.champsim.xz`, `x.lackey.gz`, `x.xtr`...).

use std::path::Path;
use std::process::ExitCode;

fn make_gups(references: &str, out: &Path, overrides: &[String]) -> xlat::Result<u64> {
    let mut ov = overrides.to_vec();
    ov.push("workload.name=gups".into());
    ov.push(format!("workload.references={references}"));
    let cfg = xlat::run::resolve("baseline-radix", &ov, None)?;
    let xtr = out.with_extension("gups-tmp.xtr");
    xlat::run::record(&cfg, &xtr, false, &mut |_, _| Ok(()))?;
    let result = xlat::trace::convert(&xtr, out);
    let _ = std::fs::remove_file(&xtr);
    result
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [flag, n, out, overrides @ ..] if flag == "--make-gups" => {
            make_gups(n, Path::new(out), overrides).map(|n| println!("{n} records written"))
        }
        [preset, trace, overrides @ ..] if !preset.starts_with('-') => {
            xlat::run::resolve(preset, overrides, Some(Path::new(trace)))
                .and_then(|cfg| xlat::run::run(cfg, None, &mut |_, _| Ok(())))
                .map(|stats| {
                    let s = serde_json::to_string_pretty(&stats.summary).expect("serialises");
                    println!("{s}");
                })
        }
        _ => {
            eprintln!(
                "usage: run_trace PRESET TRACE [KEY=VALUE ...]\n       \
                 run_trace --make-gups REFERENCES OUT [KEY=VALUE ...]"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
