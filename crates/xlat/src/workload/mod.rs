//! Built-in workload generators and the `[workload]` config that selects one (or a trace).
//!
//! A generator runs its algorithm over data structures it allocates in the simulated process's
//! virtual memory through the OS model (like a program's malloc), and emits one `Record` per load
//! or store. Layouts are implicit (addresses computed, not stored), so host memory does not grow
//! with the simulated footprint.

pub mod emit;
pub mod graph;
mod gups;
mod stream;

pub use graph::{
    BcConfig, BfsConfig, CcConfig, DcConfig, DfsConfig, GcConfig, PrConfig, SsspConfig, TcConfig,
};
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
    Bfs(BfsConfig),
    Pr(PrConfig),
    Cc(CcConfig),
    Sssp(SsspConfig),
    Bc(BcConfig),
    Tc(TcConfig),
    Dc(DcConfig),
    Dfs(DfsConfig),
    Gc(GcConfig),
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
    (
        "bfs",
        "GraphBIG breadth-first search (queue-based, top-down) on a Kronecker graph",
    ),
    (
        "pr",
        "GraphBIG PageRank (pull, damping 0.85) on a Kronecker graph",
    ),
    (
        "cc",
        "GraphBIG connected components (label propagation) on a Kronecker graph",
    ),
    (
        "sssp",
        "GraphBIG shortest paths (Dijkstra, binary heap) on a weighted Kronecker graph",
    ),
    (
        "bc",
        "GraphBIG betweenness centrality (Brandes, sampled roots) on a Kronecker graph",
    ),
    (
        "tc",
        "GraphBIG triangle counting (sorted-list intersection) on a Kronecker graph",
    ),
    (
        "dc",
        "GraphBIG degree centrality (edge scatter) on a Kronecker graph",
    ),
    (
        "dfs",
        "GraphBIG depth-first search (explicit stack) on a Kronecker graph",
    ),
    (
        "gc",
        "GraphBIG greedy graph colouring (first fit) on a Kronecker graph",
    ),
];

impl WorkloadConfig {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadConfig::Gups(_) => "gups",
            WorkloadConfig::Stream(_) => "stream",
            WorkloadConfig::Bfs(_) => "bfs",
            WorkloadConfig::Pr(_) => "pr",
            WorkloadConfig::Cc(_) => "cc",
            WorkloadConfig::Sssp(_) => "sssp",
            WorkloadConfig::Bc(_) => "bc",
            WorkloadConfig::Tc(_) => "tc",
            WorkloadConfig::Dc(_) => "dc",
            WorkloadConfig::Dfs(_) => "dfs",
            WorkloadConfig::Gc(_) => "gc",
            WorkloadConfig::Trace(_) => "trace",
        }
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        match self {
            WorkloadConfig::Gups(g) => g.validate(path),
            WorkloadConfig::Stream(s) => s.validate(path),
            WorkloadConfig::Bfs(c) => c.validate(path),
            WorkloadConfig::Pr(c) => c.validate(path),
            WorkloadConfig::Cc(c) => c.validate(path),
            WorkloadConfig::Sssp(c) => c.validate(path),
            WorkloadConfig::Bc(c) => c.validate(path),
            WorkloadConfig::Tc(c) => c.validate(path),
            WorkloadConfig::Dc(c) => c.validate(path),
            WorkloadConfig::Dfs(c) => c.validate(path),
            WorkloadConfig::Gc(c) => c.validate(path),
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
        WorkloadConfig::Bfs(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Pr(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Cc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Sssp(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Bc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Tc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Dc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Dfs(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Gc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Trace(t) => {
            os.map_everything(pid)?;
            open_trace(Path::new(&t.path), pid)?
        }
    })
}

/// Open a trace file, detecting its format.
pub fn open_trace(path: &Path, _pid: u16) -> Result<Box<dyn RecordSource>> {
    if !path.exists() {
        return Err(Error::file(path, "no such trace file"));
    }
    if crate::trace::native::is_xtr(path)? {
        return Ok(Box::new(crate::trace::native::XtrReader::open(path)?));
    }
    Err(Error::file(
        path,
        "unrecognised trace format (supported: native .xtr)",
    ))
}

pub(crate) fn nonzero(key: String, v: u64) -> Result<()> {
    if v == 0 {
        Err(Error::config(key, "must be greater than 0"))
    } else {
        Ok(())
    }
}
