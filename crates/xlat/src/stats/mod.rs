//! The statistics of a run: one serde tree whose paths name every counter
//! (`mmu.l2tlb.unified.hits`, `walk.refs.by_level.dram`, `cache.llc.translation_fraction`,
//! `dram.translation.row_hits`, `os.faults.minor`, ...), plus the `epochs` time series.
//! Components own their counters; this module assembles the tree the run writes as JSON.

use crate::core::CoreStats;
use crate::mem::cache::CacheSnapshot;
use crate::mem::dram::DramStats;
use crate::mmu::walk::WalkRefSnapshot;
use crate::mmu::MmuSnapshot;
use crate::os::OsSnapshot;
use crate::profile::ProfileSnapshot;
use serde::Serialize;

/// Everything a run measured, as one tree; paths like `mmu.l2tlb.unified.misses`.
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    pub scheme: String,
    pub workload: String,
    pub summary: Summary,
    pub core: CoreSnapshot,
    pub mmu: MmuSnapshot,
    pub walk: WalkSnapshot,
    pub cache: CachesSnapshot,
    pub dram: DramStats,
    /// DRAM reads by where their channel was (the requester's socket or another) and the
    /// cycles they spent crossing networks: only on a machine with a `[topology]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<crate::mem::topology::TopologyStats>,
    pub os: OsSnapshot,
    /// The system as a whole: core count, shootdowns that crossed cores.
    pub system: SystemSnapshot,
    /// Each core's own stats (multi-core systems only; the subtrees above are totals).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<PerCoreSnapshot>,
    /// A multi-programmed mix on a core per program: each program's statistics at its quota
    /// (absent otherwise, a mix time-sliced on one core included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<MixSnapshot>,
    pub fast_forward: FastForwardSnapshot,
    /// `sim.timing`: `"detailed"`, or `"translation"` (nothing was timed: the JSON leaves out
    /// every cycle count, IPC, latency and cache or DRAM statistic, see [`Stats::to_json`]).
    pub timing: &'static str,
    /// Profiles taken beside the run (`[profile]`), absent if none was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileSnapshot>,
    pub verify: VerifySnapshot,
    pub epochs: Vec<EpochSample>,
}

impl Stats {
    /// The stats tree as JSON. A translation-only run's leaves out what only timing gives
    /// (cycles, IPC, latencies, the caches and DRAM, walk references by the level that
    /// served them): its structures hold zeros or meaningless values that must not read as
    /// results.
    pub fn to_json(&self) -> String {
        if self.timing != "translation" {
            return serde_json::to_string_pretty(self).expect("stats always serialise");
        }
        let mut tree = serde_json::to_value(self).expect("stats always serialise");
        drop_timing(&mut tree);
        serde_json::to_string_pretty(&tree).expect("stats always serialise")
    }
}

/// Whether a statistic named `key` exists only with timing: a cycle count, a rate per
/// cycle, a latency, a cache or DRAM subtree, or walk references by the cache level that
/// served them (a translation-only run's walks visit no cache).
fn timing_key(key: &str) -> bool {
    key == "ipc"
        || key == "cycles"
        || key.ends_with("_cycles")
        || key.contains("latency")
        || key == "cache"
        || key == "dram"
        || key == "topology"
        || key == "dram_row_hit_rate"
        || key == "by_level"
        || key.starts_with("walk_refs_")
        || key.ends_with("_translation_fraction")
}

/// Remove every [`timing_key`] from `tree`, at any depth.
fn drop_timing(tree: &mut serde_json::Value) {
    match tree {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !timing_key(k));
            map.values_mut().for_each(drop_timing);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_timing),
        _ => {}
    }
}

/// The headline numbers (what the terminal summary prints).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Summary {
    pub ipc: f64,
    pub instructions: u64,
    pub cycles: u64,
    pub l1tlb_mpki: f64,
    pub l2tlb_mpki: f64,
    pub walks: u64,
    pub avg_walk_latency: f64,
    pub walk_refs_l1: u64,
    pub walk_refs_l2: u64,
    pub walk_refs_llc: u64,
    pub walk_refs_dram: u64,
    /// Page faults: minor (first touches) and major (pages read back from swap).
    pub faults: u64,
    /// Instructions run functionally before the measurement (`sim.fast_forward`).
    pub fast_forwarded_instructions: u64,
    pub dram_row_hit_rate: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CoreSnapshot {
    pub instructions: u64,
    pub cycles: u64,
    pub ipc: f64,
    #[serde(flatten)]
    pub stats: CoreStats,
}

#[derive(Clone, Debug, Serialize)]
pub struct WalkSnapshot {
    pub walks: u64,
    pub cycles: u64,
    pub avg_latency: f64,
    pub refs: WalkRefSnapshot,
}

#[derive(Clone, Debug, Serialize)]
pub struct CachesSnapshot {
    pub l1d: CacheSnapshot,
    pub l2: CacheSnapshot,
    pub llc: CacheSnapshot,
    /// The L1D's miss-status registers (over all cores): misses that waited for one.
    pub l1d_mshr: crate::mem::hierarchy::MshrStats,
}

/// The `fast_forward` subtree: what ran functionally before the measurement.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FastForwardSnapshot {
    pub records: u64,
    pub instructions: u64,
    /// The last of those records, replayed through the TLBs, page-walk caches and caches.
    pub warmed_records: u64,
    /// The fast-forward ended at the workload's region of interest (not at an instruction
    /// count, nor at the end of the records).
    pub reached_roi: bool,
}

/// The `system` subtree.
#[derive(Clone, Debug, Serialize)]
pub struct SystemSnapshot {
    pub cores: u32,
    /// TLB shootdowns that reached other cores, the IPIs they sent, and the cycles charged
    /// for them (initiators waiting plus handlers on the other cores).
    pub shootdowns_remote: u64,
    pub shootdown_ipis: u64,
    pub shootdown_ipi_cycles: u64,
    /// Barriers of multi-threaded programs the cores met at, and the cycles cores waited
    /// there for the slowest thread (docs/architecture.md, "multi-core stepping").
    pub barriers: u64,
    pub barrier_wait_cycles: u64,
}

/// One core's entry of `cores[i]`: its core model, its MMU, its private caches.
#[derive(Clone, Debug, Serialize)]
pub struct PerCoreSnapshot {
    pub core: CoreSnapshot,
    pub mmu: MmuSnapshot,
    pub cache: PrivateCachesSnapshot,
}

/// The `mix` subtree: the programs of a multi-programmed mix, in member order.
#[derive(Clone, Debug, Serialize)]
pub struct MixSnapshot {
    pub members: Vec<MixMemberSnapshot>,
}

/// One program of a mix, measured from the end of its own warm-up to its quota: what its
/// weighted speed-up is computed from (`ipc` against the same program's on another system).
#[derive(Clone, Debug, Serialize)]
pub struct MixMemberSnapshot {
    /// The program's workload (`gups`, `stream`, ...), its process and the core it ran on.
    pub workload: String,
    pub pid: u16,
    pub core_index: u32,
    /// Records it runs from its region of interest to its quota.
    pub quota: u64,
    /// Whether it reached it (a run stopped by `sim.max_instructions` may end first: then
    /// the numbers are those at the end).
    pub reached_quota: bool,
    /// Times its stream ended and started again (before or after its quota).
    pub restarts: u64,
    pub instructions: u64,
    pub cycles: u64,
    pub ipc: f64,
    /// Its core's own `core`, `mmu` and private caches at its quota.
    #[serde(flatten)]
    pub at_quota: PerCoreSnapshot,
}

#[derive(Clone, Debug, Serialize)]
pub struct PrivateCachesSnapshot {
    pub l1d: CacheSnapshot,
    pub l2: CacheSnapshot,
}

#[derive(Clone, Debug, Serialize)]
pub struct VerifySnapshot {
    pub enabled: bool,
    pub translations_checked: u64,
}

/// One `epoch_instructions` time-series sample (counters are cumulative since warmup).
#[derive(Clone, Debug, Serialize)]
pub struct EpochSample {
    pub instructions: u64,
    pub cycles: u64,
    pub l1tlb_misses: u64,
    pub l2tlb_misses: u64,
    pub walks: u64,
    /// Page faults so far, minor and major.
    pub faults: u64,
    pub pt_bytes: u64,
    pub free_frames: u64,
    /// Fraction of the L2 / LLC blocks holding translation metadata at the end of the epoch
    /// (Utopia Fig 3 averages these over epochs of 1M instructions).
    pub l2_translation_fraction: f64,
    pub llc_translation_fraction: f64,
    /// Slots in use of each region the frame policy manages itself, at the end of the epoch:
    /// each RestSeg of Utopia (`[schemes.utopia] restsegs` order; Fig 19; each total is
    /// `os.frames.restsegs[i].stats.slots`), Mosaic's iceberg pool (one region; its total is
    /// `os.frames.pool_frames`). Absent for schemes without one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restseg_used: Vec<u64>,
}
