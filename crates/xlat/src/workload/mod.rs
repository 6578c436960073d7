//! Built-in workload generators and the `[workload]` config that selects one (or a trace).
//!
//! A generator runs its algorithm over data structures it allocates in the simulated process's
//! virtual memory through the OS model (like a program's malloc), and emits one `Record` per load
//! or store. Layouts are implicit (addresses computed, not stored), so host memory does not grow
//! with the simulated footprint.

mod bst;
mod bst_ext;
mod bst_int;
mod btree;
mod canneal;
mod cg;
pub mod dist;
mod dlrm;
pub mod emit;
pub mod footprint;
pub mod graph;
mod gups;
mod hashtable;
mod index;
pub mod kernel;
mod kmer;
mod kvstore;
mod lines;
mod mix;
mod mummer;
mod skiplist;
mod stream;
mod streamcluster;
mod sysbench;
#[cfg(test)]
mod testutil;
mod turns;
mod xsbench;

pub use btree::BtreeConfig;
pub use canneal::CannealConfig;
pub use cg::CgConfig;
pub use dlrm::DlrmConfig;
pub use graph::{
    BcConfig, BfsConfig, CcConfig, DcConfig, DfsConfig, GcConfig, PrConfig, SsspConfig, TcConfig,
};
pub use gups::GupsConfig;
pub use index::IndexConfig;
pub use kmer::KmerConfig;
pub use kvstore::KvConfig;
pub use mix::MixConfig;
pub use mummer::MummerConfig;
pub use stream::StreamConfig;
pub use streamcluster::StreamclusterConfig;
pub use sysbench::SysbenchConfig;
pub use xsbench::XsbenchConfig;

use crate::error::{Error, Result};
use crate::os::AddressSpaces;
use crate::trace::RecordSource;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `[workload]`: which generator (or trace) and its parameters. `name` selects the variant.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum WorkloadConfig {
    Gups(GupsConfig),
    Stream(StreamConfig),
    Xsbench(XsbenchConfig),
    Btree(BtreeConfig),
    Hashtable(IndexConfig),
    Skiplist(IndexConfig),
    #[serde(rename = "bst-int")]
    BstInt(IndexConfig),
    #[serde(rename = "bst-ext")]
    BstExt(IndexConfig),
    #[serde(rename = "dlrm-sls")]
    DlrmSls(DlrmConfig),
    Kmer(KmerConfig),
    Mummer(MummerConfig),
    Kvstore(KvConfig),
    #[serde(rename = "sysbench-mem")]
    SysbenchMem(SysbenchConfig),
    /// Several workloads in their own processes: a core each, or time-sharing one core.
    Mix(MixConfig),
    Bfs(BfsConfig),
    Pr(PrConfig),
    Cc(CcConfig),
    Sssp(SsspConfig),
    Bc(BcConfig),
    Tc(TcConfig),
    Dc(DcConfig),
    Dfs(DfsConfig),
    Gc(GcConfig),
    /// NPB CG.
    Cg(CgConfig),
    /// PARSEC canneal.
    Canneal(CannealConfig),
    /// PARSEC streamcluster.
    Streamcluster(StreamclusterConfig),
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
        "xsbench",
        "XSBench: macroscopic cross-section lookups over a unionised energy grid",
    ),
    (
        "btree",
        "B+ tree index: root-to-leaf lookups with in-node binary search, inserts/deletes",
    ),
    (
        "hashtable",
        "ASCYLIB chained hash table: bucket head then chain walk",
    ),
    (
        "skiplist",
        "ASCYLIB skip list: top-down search along next pointers",
    ),
    (
        "bst-int",
        "ASCYLIB internal binary search tree (keys in every node)",
    ),
    (
        "bst-ext",
        "ASCYLIB external binary search tree (keys in leaves, routing nodes inside)",
    ),
    (
        "dlrm-sls",
        "DLRM embedding stage: SparseLengthsSum of Zipf-popular rows of embedding tables",
    ),
    (
        "kmer",
        "GenomicsBench k-mer counting: linear-probing hash table over a packed genome",
    ),
    (
        "mummer",
        "BioBench MUMmer: query reads matched by binary search over a genome's suffix array",
    ),
    (
        "kvstore",
        "memcached-like store: slab items, chained hash index, LRU; Zipf gets and sets",
    ),
    (
        "sysbench-mem",
        "SysBench memory test: blocks read or written word by word, sequential or random",
    ),
    (
        "mix",
        "several programs in their own processes: a core each, or time-sharing one core",
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
    (
        "cg",
        "NPB CG: conjugate gradient, sparse matrix-vector products over a CSR matrix",
    ),
    (
        "canneal",
        "PARSEC canneal: simulated-annealing placement of a netlist, pointer-chasing swaps",
    ),
    (
        "streamcluster",
        "PARSEC streamcluster: online k-median of a stream of 128-dimensional points",
    ),
];

impl WorkloadConfig {
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadConfig::Gups(_) => "gups",
            WorkloadConfig::Stream(_) => "stream",
            WorkloadConfig::Xsbench(_) => "xsbench",
            WorkloadConfig::Btree(_) => "btree",
            WorkloadConfig::Hashtable(_) => "hashtable",
            WorkloadConfig::Skiplist(_) => "skiplist",
            WorkloadConfig::BstInt(_) => "bst-int",
            WorkloadConfig::BstExt(_) => "bst-ext",
            WorkloadConfig::DlrmSls(_) => "dlrm-sls",
            WorkloadConfig::Kmer(_) => "kmer",
            WorkloadConfig::Mummer(_) => "mummer",
            WorkloadConfig::Kvstore(_) => "kvstore",
            WorkloadConfig::SysbenchMem(_) => "sysbench-mem",
            WorkloadConfig::Mix(_) => "mix",
            WorkloadConfig::Bfs(_) => "bfs",
            WorkloadConfig::Pr(_) => "pr",
            WorkloadConfig::Cc(_) => "cc",
            WorkloadConfig::Sssp(_) => "sssp",
            WorkloadConfig::Bc(_) => "bc",
            WorkloadConfig::Tc(_) => "tc",
            WorkloadConfig::Dc(_) => "dc",
            WorkloadConfig::Dfs(_) => "dfs",
            WorkloadConfig::Gc(_) => "gc",
            WorkloadConfig::Cg(_) => "cg",
            WorkloadConfig::Canneal(_) => "canneal",
            WorkloadConfig::Streamcluster(_) => "streamcluster",
            WorkloadConfig::Trace(_) => "trace",
        }
    }

    /// How many cores the workload's records name: they carry `core` in `0..cores()`. One per
    /// software thread of a multi-threaded workload, one per member of a mix (each its own
    /// process), 1 for everything else.
    pub fn cores(&self) -> u32 {
        match self {
            WorkloadConfig::Gups(g) => g.threads,
            WorkloadConfig::Stream(s) => s.threads,
            WorkloadConfig::Xsbench(x) => x.threads,
            WorkloadConfig::Bfs(c) => c.threads,
            WorkloadConfig::Pr(c) => c.threads,
            WorkloadConfig::Cg(c) => c.threads,
            WorkloadConfig::Hashtable(c)
            | WorkloadConfig::Skiplist(c)
            | WorkloadConfig::BstInt(c)
            | WorkloadConfig::BstExt(c) => c.threads,
            WorkloadConfig::Mix(m) => m.members.len().try_into().unwrap_or(u32::MAX),
            _ => 1,
        }
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        match self {
            WorkloadConfig::Gups(g) => g.validate(path),
            WorkloadConfig::Stream(s) => s.validate(path),
            WorkloadConfig::Xsbench(x) => x.validate(path),
            WorkloadConfig::Btree(b) => b.validate(path),
            WorkloadConfig::Hashtable(c)
            | WorkloadConfig::Skiplist(c)
            | WorkloadConfig::BstInt(c)
            | WorkloadConfig::BstExt(c) => c.validate(path),
            WorkloadConfig::DlrmSls(d) => d.validate(path),
            WorkloadConfig::Kmer(k) => k.validate(path),
            WorkloadConfig::Mummer(m) => m.validate(path),
            WorkloadConfig::Kvstore(k) => k.validate(path),
            WorkloadConfig::SysbenchMem(s) => s.validate(path),
            WorkloadConfig::Mix(m) => m.validate(path),
            WorkloadConfig::Bfs(c) => c.validate(path),
            WorkloadConfig::Pr(c) => c.validate(path),
            WorkloadConfig::Cc(c) => c.validate(path),
            WorkloadConfig::Sssp(c) => c.validate(path),
            WorkloadConfig::Bc(c) => c.validate(path),
            WorkloadConfig::Tc(c) => c.validate(path),
            WorkloadConfig::Dc(c) => c.validate(path),
            WorkloadConfig::Dfs(c) => c.validate(path),
            WorkloadConfig::Gc(c) => c.validate(path),
            WorkloadConfig::Cg(c) => c.validate(path),
            WorkloadConfig::Canneal(c) => c.validate(path),
            WorkloadConfig::Streamcluster(c) => c.validate(path),
            WorkloadConfig::Trace(t) if t.path.is_empty() => Err(Error::config(
                format!("{path}.path"),
                "must name a trace file",
            )),
            WorkloadConfig::Trace(_) => Ok(()),
        }
    }
}

/// Create the process(es) the workload needs in `os` and return its record source.
pub fn build(
    cfg: &WorkloadConfig,
    os: &mut dyn AddressSpaces,
    seed: u64,
) -> Result<Box<dyn RecordSource>> {
    if let WorkloadConfig::Mix(m) = cfg {
        return Ok(Box::new(mix::build(m, os, seed)?));
    }
    let pid = os.spawn()?;
    build_into(cfg, os, pid, seed)
}

/// Build one program into the existing process `pid` (a mix calls this once per member), then
/// start its threads beyond the main one: their stacks are mapped after the program's data, as
/// `pthread_create` maps them after its set-up.
pub(crate) fn build_into(
    cfg: &WorkloadConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<Box<dyn RecordSource>> {
    let source = build_one(cfg, os, pid, seed)?;
    for _ in 1..cfg.cores() {
        os.start_thread(pid)?;
    }
    Ok(source)
}

fn build_one(
    cfg: &WorkloadConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<Box<dyn RecordSource>> {
    Ok(match cfg {
        WorkloadConfig::Gups(g) => Box::new(gups::build(g, os, pid, seed)?),
        WorkloadConfig::Stream(s) => Box::new(stream::build(s, os, pid)?),
        WorkloadConfig::Xsbench(x) => Box::new(xsbench::build(x, os, pid, seed)?),
        WorkloadConfig::Btree(b) => Box::new(btree::build(b, os, pid, seed)?),
        WorkloadConfig::Hashtable(c) => Box::new(hashtable::build(c, os, pid, seed)?),
        WorkloadConfig::Skiplist(c) => Box::new(skiplist::build(c, os, pid, seed)?),
        WorkloadConfig::BstInt(c) => Box::new(bst_int::build(c, os, pid, seed)?),
        WorkloadConfig::BstExt(c) => Box::new(bst_ext::build(c, os, pid, seed)?),
        WorkloadConfig::DlrmSls(d) => Box::new(dlrm::build(d, os, pid, seed)?),
        WorkloadConfig::Kmer(k) => Box::new(kmer::build(k, os, pid, seed)?),
        WorkloadConfig::Mummer(m) => Box::new(mummer::build(m, os, pid, seed)?),
        WorkloadConfig::Kvstore(k) => Box::new(kvstore::build(k, os, pid, seed)?),
        WorkloadConfig::SysbenchMem(s) => Box::new(sysbench::build(s, os, pid, seed)?),
        WorkloadConfig::Mix(_) => {
            return Err(Error::Workload(
                "a mix cannot be a member of another mix".into(),
            ))
        }
        WorkloadConfig::Bfs(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Pr(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Cc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Sssp(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Bc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Tc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Dc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Dfs(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Gc(c) => Box::new(c.build(os, pid, seed)?),
        WorkloadConfig::Cg(c) => Box::new(cg::build(c, os, pid, seed)?),
        WorkloadConfig::Canneal(c) => Box::new(canneal::build(c, os, pid, seed)?),
        WorkloadConfig::Streamcluster(c) => Box::new(streamcluster::build(c, os, pid, seed)?),
        WorkloadConfig::Trace(t) => {
            os.map_everything(pid)?;
            crate::trace::open(Path::new(&t.path))?
        }
    })
}

fn one_thread() -> u32 {
    1
}

/// One array of a synthetic kernel (`gups`, `stream`): `bytes` mapped in `pid`, backed by
/// explicit 1 GiB pages with `hugetlb_1g`, and mapped up front with `populate`.
fn map_array(
    os: &mut dyn AddressSpaces,
    pid: u16,
    bytes: u64,
    hugetlb_1g: bool,
    populate: bool,
) -> Result<crate::addr::VirtAddr> {
    let kind = if hugetlb_1g {
        crate::os::MapKind::Huge1G
    } else {
        crate::os::MapKind::Anon
    };
    let va = os.mmap(pid, bytes, kind)?;
    if populate {
        os.populate(pid, va, bytes)?;
    }
    Ok(va)
}

/// The `threads` key of the multi-threaded workloads.
pub(crate) fn threads_in_range(key: String, threads: u32) -> Result<()> {
    if (1..=emit::MAX_THREADS).contains(&threads) {
        Ok(())
    } else {
        Err(Error::config(
            key,
            format!(
                "must be between 1 and {} (software threads, one per core), got {threads}",
                emit::MAX_THREADS
            ),
        ))
    }
}

pub(crate) fn nonzero(key: String, v: u64) -> Result<()> {
    if v == 0 {
        Err(Error::config(key, "must be greater than 0"))
    } else {
        Ok(())
    }
}
