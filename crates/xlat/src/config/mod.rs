//! System configuration: one TOML document describes a whole simulated system.
//!
//! Loading goes: preset or file → `extends` chain merged (deepest base first) → `--set`
//! overrides → serde into [`SimConfig`] with `deny_unknown_fields` (unknown keys are errors with
//! their full path) → [`SimConfig::validate`] (geometry and ranges, again with full paths).
//! The resolved config is serialised back to TOML and stored beside every run's stats.

mod load;
pub mod presets;

pub use load::{load, parse_override};

use crate::addr::PageSize;
use crate::assoc::Replacement;
use crate::error::{Error, Result};
use crate::mem::dram::DramConfig;
use crate::os::OsConfig;
use crate::workload::WorkloadConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole simulated system plus the run parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of every random choice in the run (fragmentation, replacement, workloads).
    pub seed: u64,
    /// Translation scheme, by registry name (`xlat presets` / docs list them).
    pub scheme: String,
    pub core: CoreConfig,
    pub mmu: MmuConfig,
    pub cache: CacheHierarchyConfig,
    pub dram: DramConfig,
    pub os: OsConfig,
    pub pt: PtConfig,
    pub sim: RunConfig,
    pub workload: WorkloadConfig,
}

/// Core timing model (DESIGN.md §2).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    /// `ooo` (ROB-window out-of-order) or `inorder`.
    pub model: CoreModel,
    /// Instructions dispatched (and retired) per cycle.
    pub width: u32,
    /// Re-order buffer entries (ignored by `inorder`, which behaves as a ROB of 1).
    pub rob_size: u32,
    /// Core clock, used to convert DRAM nanoseconds to cycles.
    pub frequency_ghz: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoreModel {
    Ooo,
    Inorder,
}

/// One TLB array. `entries = 0` removes it from the system.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    pub entries: u32,
    pub ways: u32,
    /// Access latency in cycles.
    pub latency: u32,
    pub replacement: Replacement,
    /// Page sizes this array holds (`"4K"`, `"2M"`, `"1G"`).
    pub page_sizes: Vec<PageSize>,
}

/// The MMU: TLB levels, page-walk caches, walkers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmuConfig {
    /// Concurrent page walks the core can have in flight.
    pub walkers: u32,
    /// Cache level where page-walk requests enter the hierarchy: `l1d`, `l2` or `llc`.
    pub walker_entry: WalkerEntry,
    /// L1 instruction TLB.
    pub itlb: TlbConfig,
    /// L1 data TLBs, by name (e.g. `4k`, `2m`, `1g`), probed in parallel.
    pub l1tlb: BTreeMap<String, TlbConfig>,
    /// L2 TLBs, by name (e.g. `unified`), probed in parallel after an L1 miss.
    pub l2tlb: BTreeMap<String, TlbConfig>,
    /// Split page-walk caches, one per non-leaf level (PML4, PDPT, PD), each of this geometry.
    pub pwc: TlbConfig,
    /// The walker of hashed page tables (schemes `ecpt`, `mehpt`).
    #[serde(default)]
    pub hpt: crate::mmu::hashed_walker::HptWalkerConfig,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WalkerEntry {
    L1d,
    L2,
    Llc,
}

/// One cache level.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size: u64,
    pub ways: u32,
    /// Lookup latency in cycles, added for every access that reaches this level.
    pub latency: u32,
    pub replacement: Replacement,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheHierarchyConfig {
    pub l1d: CacheConfig,
    pub l2: CacheConfig,
    pub llc: CacheConfig,
}

/// Page-table organisation parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtConfig {
    /// Radix levels: 4 (48-bit VA) or 5 (57-bit VA).
    pub levels: u32,
    /// Hashed page tables (schemes `ecpt` and `mehpt`): ways, sizes, thresholds, hashes,
    /// ME-HPT techniques. Defaults are ME-HPT Table III.
    #[serde(default)]
    pub hashed: crate::pt::hashed::HashedConfig,
}

/// Run control.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Instructions simulated before all statistics are reset (structures stay warm).
    pub warmup_instructions: u64,
    /// Record a time-series sample every this many instructions (0 = off).
    pub epoch_instructions: u64,
    /// Check every translation against the OS's ground-truth mapping.
    pub verify: bool,
    /// Stop after this many instructions (0 = run the whole workload/trace).
    pub max_instructions: u64,
}

fn pow2(key: String, what: &str, v: u64) -> Result<()> {
    if v == 0 || !v.is_power_of_two() {
        return Err(Error::config(
            key,
            format!("{what} must be a non-zero power of two, got {v}"),
        ));
    }
    Ok(())
}

fn nonzero(key: String, v: u64) -> Result<()> {
    if v == 0 {
        return Err(Error::config(key, "must be greater than 0"));
    }
    Ok(())
}

impl TlbConfig {
    /// Sets of this array (valid only after `validate`).
    pub fn sets(&self) -> u32 {
        self.entries / self.ways
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        if self.entries == 0 {
            return Ok(()); // absent
        }
        nonzero(format!("{path}.ways"), self.ways as u64)?;
        nonzero(format!("{path}.latency"), self.latency as u64)?;
        if !self.entries.is_multiple_of(self.ways) {
            return Err(Error::config(
                format!("{path}.entries"),
                format!(
                    "{} entries are not a multiple of {} ways",
                    self.entries, self.ways
                ),
            ));
        }
        pow2(
            format!("{path}.entries"),
            "entries / ways (the set count)",
            self.sets() as u64,
        )?;
        if self.page_sizes.is_empty() {
            return Err(Error::config(
                format!("{path}.page_sizes"),
                "must name at least one page size",
            ));
        }
        Ok(())
    }
}

impl CacheConfig {
    pub fn sets(&self) -> u64 {
        self.size / crate::addr::LINE_BYTES / self.ways as u64
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        nonzero(format!("{path}.ways"), self.ways as u64)?;
        nonzero(format!("{path}.latency"), self.latency as u64)?;
        let line_sets = self.size / crate::addr::LINE_BYTES;
        if !self
            .size
            .is_multiple_of(crate::addr::LINE_BYTES * self.ways as u64)
            || line_sets == 0
        {
            return Err(Error::config(
                format!("{path}.size"),
                format!(
                    "{} bytes is not a whole number of {}-way sets of 64-byte lines",
                    self.size, self.ways
                ),
            ));
        }
        pow2(
            format!("{path}.size"),
            "size / (64 * ways) (the set count)",
            self.sets(),
        )
    }
}

impl SimConfig {
    /// Check geometry and ranges; every error names the full key.
    pub fn validate(&self) -> Result<()> {
        let c = &self.core;
        nonzero("core.width".into(), c.width as u64)?;
        nonzero("core.rob_size".into(), c.rob_size as u64)?;
        if !(c.frequency_ghz > 0.0 && c.frequency_ghz < 100.0) {
            return Err(Error::config("core.frequency_ghz", "must be in (0, 100)"));
        }
        nonzero("mmu.walkers".into(), self.mmu.walkers as u64)?;
        self.mmu.itlb.validate("mmu.itlb")?;
        for (name, t) in &self.mmu.l1tlb {
            t.validate(&format!("mmu.l1tlb.{name}"))?;
        }
        for (name, t) in &self.mmu.l2tlb {
            t.validate(&format!("mmu.l2tlb.{name}"))?;
        }
        self.mmu.pwc.validate("mmu.pwc")?;
        self.cache.l1d.validate("cache.l1d")?;
        self.cache.l2.validate("cache.l2")?;
        self.cache.llc.validate("cache.llc")?;
        self.dram.validate("dram")?;
        self.os.validate("os")?;
        if let Some(cap) = self.dram.capacity_bytes() {
            if self.os.physmem.bytes > cap {
                return Err(Error::config(
                    "os.physmem.bytes",
                    format!(
                        "{} bytes do not fit in the DRAM geometry ({cap} bytes; see dram.rows)",
                        self.os.physmem.bytes
                    ),
                ));
            }
        }
        if !(self.pt.levels == 4 || self.pt.levels == 5) {
            return Err(Error::config(
                "pt.levels",
                format!("must be 4 or 5, got {}", self.pt.levels),
            ));
        }
        crate::mmu::scheme::check_name(&self.scheme)?;
        self.pt.hashed.validate("pt.hashed")?;
        self.mmu.hpt.validate("mmu.hpt")?;
        self.workload.validate("workload")
    }

    /// The config as TOML text (what is saved beside a run's stats).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a validated config always serialises")
    }
}
