//! One-call entry points used by the CLI, the Python bindings and tests: resolve a config, run
//! it, and store the results.

use crate::config::{self, SimConfig};
use crate::error::{Error, Result};
use crate::sim::{Simulation, Stats};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// Resolve `spec` + `overrides`, pointing the workload at `trace` if given.
pub fn resolve(spec: &str, overrides: &[String], trace: Option<&Path>) -> Result<SimConfig> {
    let mut ov = overrides.to_vec();
    if let Some(t) = trace {
        let path = toml::Value::String(t.display().to_string()).to_string();
        ov.push("workload.name=trace".into());
        ov.push(format!("workload.path={path}"));
    }
    config::load(spec, &ov)
}

/// Run `cfg`. If `out` is given, write `stats.json` and `config.toml` there (atomically: a
/// crash never leaves a half-written file that looks like a result).
pub fn run(
    cfg: SimConfig,
    out: Option<&Path>,
    progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
) -> Result<Stats> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::file(dir, format!("cannot create output directory: {e}")))?;
        write_atomic(&dir.join("config.toml"), &cfg.to_toml())?;
    }
    let mut sim = Simulation::new(cfg)?;
    let stats = sim.run(progress)?;
    if let Some(dir) = out {
        write_atomic(&dir.join("stats.json"), &stats.to_json())?;
    }
    Ok(stats)
}

pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| Error::file(&tmp, e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::file(path, e.to_string()))
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    pub workload: String,
    pub references: u64,
    pub seconds: f64,
    pub refs_per_second: f64,
}

/// Simulated references per second of `workload` on `baseline-radix` (gups over a 4 GiB table:
/// nearly every reference misses every TLB; stream: nearly every one hits). Setup (booting and
/// fragmenting memory) is excluded; the reference loop is timed.
pub fn bench(workload: &str, references: u64) -> Result<BenchResult> {
    let ov = vec![
        format!("workload.name={workload}"),
        format!("workload.references={references}"),
    ];
    let cfg = config::load("baseline-radix", &ov)?;
    let mut sim = Simulation::new(cfg)?;
    let start = Instant::now();
    let stats = sim.run(&mut |_, _| Ok(()))?;
    let seconds = start.elapsed().as_secs_f64();
    let refs = stats.core.stats.memory_refs;
    Ok(BenchResult {
        workload: workload.to_string(),
        references: refs,
        seconds,
        refs_per_second: refs as f64 / seconds.max(1e-9),
    })
}
