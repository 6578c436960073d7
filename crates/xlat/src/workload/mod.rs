//! Built-in workload generators and the `[workload]` config that selects one (or a trace).
//!
//! A generator runs its algorithm over data structures it allocates in the simulated process's
//! virtual memory through the OS model (like a program's malloc), and emits one `Record` per load
//! or store. Layouts are implicit (addresses computed, not stored), so host memory does not grow
//! with the simulated footprint.

pub mod emit;
mod gups;
mod stream;

pub use gups::{Gups, GupsConfig};
pub use stream::{Stream, StreamConfig};

use crate::error::{Error, Result};
use crate::os::Os;
use crate::trace::RecordSource;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `[workload]`: which generator (or trace) and its parameters. `name` selects the variant.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum WorkloadConfig {
    Gups(GupsConfig),
    Stream(StreamConfig),
    /// A trace file in any supported format (`path`).
    Trace(TraceConfig),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    pub path: String,
}

/// `(name, description)` of the built-in generators.
pub const WORKLOADS: &[(&str, &str)] = &[
    (
        "gups",
        "HPCC RandomAccess: read-modify-write of random 8-byte words of a table",
    ),
    (
        "stream",
        "STREAM triad a[i] = b[i] + q*c[i] over three arrays",
    ),
];

impl WorkloadConfig {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadConfig::Gups(_) => "gups",
            WorkloadConfig::Stream(_) => "stream",
            WorkloadConfig::Trace(_) => "trace",
        }
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        match self {
            WorkloadConfig::Gups(g) => g.validate(path),
            WorkloadConfig::Stream(s) => s.validate(path),
            WorkloadConfig::Trace(t) if t.path.is_empty() => Err(Error::config(
                format!("{path}.path"),
                "must name a trace file",
            )),
            WorkloadConfig::Trace(_) => Ok(()),
        }
    }
}

/// Create the process(es) the workload needs in `os` and return its record source.
pub fn build(cfg: &WorkloadConfig, os: &mut Os, seed: u64) -> Result<Box<dyn RecordSource>> {
    let pid = os.spawn()?;
    Ok(match cfg {
        WorkloadConfig::Gups(g) => Box::new(Gups::new(g, os, pid, seed)?),
        WorkloadConfig::Stream(s) => Box::new(Stream::new(s, os, pid)?),
        WorkloadConfig::Trace(t) => {
            os.map_everything(pid)?;
            crate::trace::open(Path::new(&t.path))?
        }
    })
}

pub(crate) fn nonzero(key: String, v: u64) -> Result<()> {
    if v == 0 {
        Err(Error::config(key, "must be greater than 0"))
    } else {
        Ok(())
    }
}
