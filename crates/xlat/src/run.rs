//! One-call entry points used by the CLI, the Python bindings and tests: resolve a config, run
//! it, and store the results.

use crate::error::{Error, Result};
use crate::sim::SimConfig;
use crate::sim::{Simulation, Stats};
use crate::workload::WorkloadConfig;
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
    SimConfig::load(spec, &ov)
}

/// Estimated host memory of a run of `cfg`: its workload's data and per-page state
/// ([`crate::workload::WorkloadConfig::host_bytes`]) plus the structures its sections size
/// ([`SimConfig::host_uses`]). `None` where the workload has no formula (a trace, a program
/// whose data the engine does not hold). A sweep uses it to keep the runs it starts together
/// within the machine's memory.
pub fn host_estimate(cfg: &SimConfig) -> Result<Option<u64>> {
    let structures = u64::try_from(cfg.host_uses()?.total()).unwrap_or(u64::MAX);
    Ok(cfg
        .workload
        .host_bytes()
        .map(|data| data.saturating_add(structures)))
}

/// ME-HPT Table II measured on real tables: for each chunk size of `spec`'s
/// `[schemes.hashed.table]`, the largest 4 KiB-page way it builds, growing one way up to
/// `max_bytes` of table memory (see `pt::hashed::limits`).
pub fn hpt_way_limits(
    spec: &str,
    overrides: &[String],
    max_bytes: u64,
) -> Result<Vec<crate::pt::hashed::limits::WayLimit>> {
    let cfg = SimConfig::load(spec, overrides)?;
    crate::pt::hashed::limits::way_limits(&cfg.schemes.hashed.table, max_bytes)
}

/// Build the machine of `cfg` and start its workload's processes (one, or one per member of a
/// mix), without building the workload or simulating. What can fail at boot fails here, in
/// seconds at any footprint: physical memory that cannot be fragmented as asked, a segment's
/// contiguous block that memory cannot give (a RestSeg's TAR, a direct segment), a structure
/// too large for its config. Mapping the footprint is left out, so a run that boots can still
/// run out of memory later.
pub fn boot(cfg: SimConfig) -> Result<()> {
    /// The records of a machine that only boots: none.
    struct NoRecords;
    impl crate::trace::RecordSource for NoRecords {
        fn fill(&mut self, buf: &mut Vec<crate::trace::Record>) -> Result<()> {
            buf.clear();
            Ok(())
        }
    }
    let processes = match &cfg.workload {
        WorkloadConfig::Mix(m) => m.members.len(),
        _ => 1,
    };
    Simulation::with_source(cfg, move |os| {
        for _ in 0..processes {
            os.spawn()?;
        }
        Ok(Box::new(NoRecords) as Box<dyn crate::trace::RecordSource>)
    })
    .map(drop)
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
    check_host_memory(&cfg, host_memory_bytes())?;
    let trace = match &cfg.workload {
        WorkloadConfig::Trace(t) => Some(std::path::PathBuf::from(&t.path)),
        _ => None,
    };
    let mut sim = Simulation::new(cfg)?;
    let stats = sim.run(progress).map_err(|e| match (e, trace) {
        // A trace's record is named by its place in the file.
        (Error::AtRecord { record, source }, Some(path)) => {
            let place = crate::trace::locate(&path, record).map_or_else(
                || format!("record {record}"),
                |p| format!("record {record}, {p}"),
            );
            Error::file(&path, format!("{place}: {source}"))
        }
        (e, _) => e,
    })?;
    if let Some(dir) = out {
        write_atomic(&dir.join("stats.json"), &stats.to_json())?;
    }
    Ok(stats)
}

/// This machine's memory (`MemTotal` of `/proc/meminfo`), where the system reports it.
fn host_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Refuse a run whose estimated host memory ([`crate::workload::WorkloadConfig::host_bytes`])
/// exceeds the machine's memory: it would swap or be killed hours in.
fn check_host_memory(cfg: &SimConfig, host: Option<u64>) -> Result<()> {
    let (Some(need), Some(have)) = (cfg.workload.host_bytes(), host) else {
        return Ok(());
    };
    if need <= have {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err(Error::config(
        "workload",
        format!(
            "`{}` at this size needs about {:.1} GiB of host memory (estimated; `xlat \
             workloads --footprint SIZE` lists it), more than this machine's {:.1} GiB: choose \
             a smaller workload.footprint (or its size keys)",
            cfg.workload.name(),
            gib(need),
            gib(have)
        ),
    ))
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
    /// Time to the first batch of records: the generator's own set-up (building a graph, an
    /// index...) runs then, once per run, whatever the run's length.
    pub setup_seconds: f64,
    /// Time from the first batch to the end, over which `refs_per_second` is measured.
    pub seconds: f64,
    pub refs_per_second: f64,
}

/// Times a record stream: set-up until the first batch, then the steady rate after it.
struct StreamClock {
    start: Instant,
    first: Option<(Instant, u64)>,
}

impl StreamClock {
    fn new() -> StreamClock {
        StreamClock {
            start: Instant::now(),
            first: None,
        }
    }

    /// `done` records have been consumed so far.
    fn tick(&mut self, done: u64) {
        if self.first.is_none() {
            self.first = Some((Instant::now(), done));
        }
    }

    fn result(&self, workload: &str, total: u64) -> BenchResult {
        let end = Instant::now();
        let (first_at, first_done) = self.first.unwrap_or((end, total));
        let seconds = (end - first_at).as_secs_f64();
        BenchResult {
            workload: workload.to_string(),
            references: total,
            setup_seconds: (first_at - self.start).as_secs_f64(),
            seconds,
            refs_per_second: (total - first_done) as f64 / seconds.max(1e-9),
        }
    }
}

fn bench_config(
    system: &str,
    workload: &str,
    references: u64,
    overrides: &[String],
) -> Result<SimConfig> {
    let mut ov = vec![format!("workload.name={workload}")];
    if workload == "trace" {
        // A trace (`workload.path` among the overrides) is as long as it is: stop after
        // `references` instructions of it, one per record for a trace without non-memory ones.
        ov.push(format!("sim.max_instructions={references}"));
    } else {
        ov.push(format!("workload.references={references}"));
    }
    ov.extend_from_slice(overrides);
    SimConfig::load(system, &ov)
}

/// Simulated references per second of `workload` on `system` (a preset or config file;
/// `baseline-radix` for the headline numbers: gups over a 4 GiB table, where nearly every
/// reference misses every TLB, and stream, where nearly every one hits). Booting memory and
/// building the workload are excluded, and so is the generator's set-up before its first
/// records (reported as `setup_seconds`): the rate is that of the reference loop, over all
/// cores. `overrides` are `key=value` config overrides (e.g. `sim.cores=4`).
pub fn bench(
    system: &str,
    workload: &str,
    references: u64,
    overrides: &[String],
) -> Result<BenchResult> {
    let mut sim = Simulation::new(bench_config(system, workload, references, overrides)?)?;
    let mut clock = StreamClock::new();
    let stats = sim.run(&mut |done, _| {
        clock.tick(done);
        Ok(())
    })?;
    Ok(clock.result(workload, stats.core.stats.memory_refs))
}

/// What [`record`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// Records in the trace.
    pub records: u64,
    /// Records the workload emitted before its region of interest: its set-up (0 for a
    /// workload without; all it emitted if it never reached its region).
    pub setup_records: u64,
    /// Whether the set-up records are in the trace, before the region's, or were left out.
    pub setup_included: bool,
}

/// Room kept in a recorded trace's metadata for the keys known only at the end (the set-up's
/// length and where the region of interest begins, numbers of up to 20 digits).
const RECORD_META_ROOM: usize = 64;

/// Write the records of `cfg`'s workload to a native trace at `out`, with the workload's name,
/// parameters and seed as metadata. A workload's set-up (the records before its region of
/// interest, which a run fast-forwards through) is left out unless `include_setup`, so the
/// trace holds what a run of the workload measures: `workload.references` records. With the
/// set-up, the metadata says where the region begins (`roi_start`), and a run of the trace
/// fast-forwards to it as a run of the workload does. Either way the metadata says how long
/// the set-up was (`setup_records`) and whether it is in the trace (`setup_included`).
pub fn record(
    cfg: &SimConfig,
    out: &Path,
    include_setup: bool,
    progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
) -> Result<Recorded> {
    use crate::trace::native::{META_ROI_START, META_SETUP_INCLUDED, META_SETUP_RECORDS};
    use crate::trace::Roi;
    let mut os = crate::sim::boot_os(cfg)?;
    let mut source = crate::workload::build(&cfg.workload, os.as_mut(), cfg.seed)?;
    let mut meta = serde_json::Map::new();
    meta.insert("workload".into(), cfg.workload.name().into());
    let params = serde_json::to_value(&cfg.workload).expect("workload config serialises");
    meta.insert("parameters".into(), params);
    meta.insert("seed".into(), cfg.seed.into());
    meta.insert("xlat_version".into(), env!("CARGO_PKG_VERSION").into());
    meta.insert(META_SETUP_INCLUDED.into(), include_setup.into());
    let tmp = out.with_extension("xtr.tmp");
    let result = (|| {
        let mut writer = crate::trace::native::XtrWriter::create_with_room(
            &tmp,
            meta.clone(),
            RECORD_META_ROOM,
        )?;
        let mut buf = Vec::with_capacity(crate::trace::BATCH);
        let mut read = 0u64;
        loop {
            source.fill(&mut buf)?;
            if buf.is_empty() {
                break;
            }
            // The set-up's records, if this batch holds any and they are left out.
            let setup = match (include_setup, source.roi()) {
                (true, _) => 0,
                (false, Roi::At(at)) => at.saturating_sub(read).min(buf.len() as u64) as usize,
                (false, Roi::NotYet) => buf.len(),
            };
            read += buf.len() as u64;
            writer.write_all(&buf[setup..])?;
            progress(read, source.len_hint())?;
        }
        let setup_records = match source.roi() {
            Roi::At(at) => at,
            Roi::NotYet => read,
        };
        meta.insert(META_SETUP_RECORDS.into(), setup_records.into());
        let roi_start = if include_setup { setup_records } else { 0 };
        meta.insert(META_ROI_START.into(), roi_start.into());
        let records = writer.finish_with_meta(meta)?;
        std::fs::rename(&tmp, out).map_err(|e| Error::file(out, e.to_string()))?;
        Ok(Recorded {
            records,
            setup_records,
            setup_included: include_setup,
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Records per second a workload generator produces on its own (no simulation), measured the
/// same way as [`bench`], to compare with it: generation must never be the bottleneck.
pub fn bench_generator(workload: &str, references: u64) -> Result<BenchResult> {
    let cfg = bench_config("baseline-radix", workload, references, &[])?;
    let mut os = crate::sim::boot_os(&cfg)?;
    let mut source = crate::workload::build(&cfg.workload, os.as_mut(), cfg.seed)?;
    let mut buf = Vec::with_capacity(4096);
    let mut clock = StreamClock::new();
    let mut n = 0u64;
    loop {
        source.fill(&mut buf)?;
        if buf.is_empty() {
            break;
        }
        n += buf.len() as u64;
        clock.tick(n);
    }
    Ok(clock.result(workload, n))
}

/// One built-in workload as `xlat workloads` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadInfo {
    pub name: String,
    pub description: String,
    /// The `[workload]` table with every parameter at its default, as TOML.
    pub defaults: String,
    /// Bytes of virtual memory the workload allocates at its defaults (with a footprint: the
    /// bytes of its data at the parameters chosen for it).
    pub footprint_bytes: u64,
    /// Estimated host memory of a run at that footprint (an upper bound: the workload's host
    /// data plus the engine's per-page state), where the workload has a formula.
    pub host_bytes: Option<u64>,
}

/// Every built-in workload with its default parameters and footprint (measured by building
/// it, without mapping memory or running it).
pub fn workloads() -> Result<Vec<WorkloadInfo>> {
    workloads_at(None)
}

/// [`workloads`], or with `footprint` (a size such as `"8GiB"`) the workloads that take
/// `workload.footprint`, each with the parameters that reach it (in `defaults`), the bytes of
/// its data and the host memory a run needs (from the formulas, without building anything).
pub fn workloads_at(footprint: Option<&str>) -> Result<Vec<WorkloadInfo>> {
    if let Some(size) = footprint {
        let size = toml::Value::String(size.to_string()).to_string();
        let mut out = Vec::new();
        for (name, description) in crate::workload::WORKLOADS {
            let cfg = SimConfig::load(
                "baseline-radix",
                &[
                    format!("workload.name={name}"),
                    format!("workload.footprint={size}"),
                ],
            );
            let cfg = match cfg {
                Ok(cfg) => cfg,
                // This workload does not take a footprint (or cannot reach this one).
                Err(Error::Config { .. }) => continue,
                Err(e) => return Err(e),
            };
            let mut table = toml::Table::new();
            table.insert(
                "workload".into(),
                toml::Value::try_from(&cfg.workload).expect("serialises"),
            );
            out.push(WorkloadInfo {
                name: name.to_string(),
                description: description.to_string(),
                defaults: toml::to_string(&table).expect("serialises"),
                footprint_bytes: cfg.workload.footprint_bytes().unwrap_or(0),
                host_bytes: cfg.workload.host_bytes(),
            });
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for (name, description) in crate::workload::WORKLOADS {
        let defaults_cfg = SimConfig::load("baseline-radix", &[format!("workload.name={name}")])?;
        // Building without populating allocates the VMAs but maps nothing: cheap at any size.
        let cfg = SimConfig::load(
            "baseline-radix",
            &[
                format!("workload.name={name}"),
                "workload.populate=false".into(),
                "os.physmem.fragmentation=0.0".into(),
            ],
        )?;
        let mut os = crate::sim::boot_os(&cfg)?;
        drop(crate::workload::build(
            &cfg.workload,
            os.as_mut(),
            cfg.seed,
        )?);
        let footprint_bytes = (0..os.processes())
            .filter_map(|pid| os.vmas(pid as u16).ok())
            .flatten()
            .filter(|v| v.role.is_data())
            .map(|v| (v.end.0 - v.start.0) * 4096)
            .sum();
        let mut table = toml::Table::new();
        table.insert(
            "workload".into(),
            toml::Value::try_from(&defaults_cfg.workload).expect("serialises"),
        );
        let defaults = toml::to_string(&table).expect("serialises");
        out.push(WorkloadInfo {
            name: name.to_string(),
            description: description.to_string(),
            defaults,
            footprint_bytes,
            host_bytes: defaults_cfg.workload.host_bytes(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_beyond_the_host_memory_are_refused_with_the_key_to_change() {
        let cfg =
            SimConfig::load("baseline-radix", &["workload.footprint=\"64GiB\"".into()]).unwrap();
        check_host_memory(&cfg, Some(64 << 30)).unwrap();
        let e = check_host_memory(&cfg, Some(1 << 30))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("workload.footprint") && e.contains("GiB of host memory"),
            "{e}"
        );
        check_host_memory(&cfg, None).unwrap();
    }

    #[test]
    fn a_runs_host_estimate_is_its_workloads_data_and_its_configs_structures() {
        let gups = SimConfig::load("baseline-radix", &["workload.name=\"gups\"".into()]).unwrap();
        let structures = gups.host_uses().unwrap().total() as u64;
        let data = gups.workload.host_bytes().unwrap();
        assert_eq!(host_estimate(&gups).unwrap(), Some(data + structures));
        // A trace's records are read from its file: no formula, no estimate.
        let trace = SimConfig::load(
            "baseline-radix",
            &[
                "workload.name=\"trace\"".into(),
                "workload.path=\"t.xtr\"".into(),
            ],
        )
        .unwrap();
        assert_eq!(host_estimate(&trace).unwrap(), None);
    }
}
