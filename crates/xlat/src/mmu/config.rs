//! `[mmu]`: TLB arrays and levels, walkers.

use crate::addr::PageSize;
use crate::assoc::Replacement;
use crate::config::{nonzero, pow2, ways, HostUses, Validate};
use crate::error::{Error, Result};
use crate::mem::hierarchy::WalkerEntry;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One TLB array. `entries = 0` removes it from the system.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

impl TlbConfig {
    /// Sets of this array (valid only after `validate`).
    pub fn sets(&self) -> u32 {
        self.entries / self.ways
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        if self.entries == 0 {
            return Ok(()); // absent
        }
        ways(format!("{path}.ways"), self.ways as u64)?;
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

    /// Count `copies` arrays of this geometry (set at `path`) whose entries take `slot_bytes`
    /// of host memory each (the entry type's [`crate::assoc::SetAssoc::SLOT_BYTES`]).
    pub fn host_use(
        &self,
        path: &str,
        slot_bytes: u64,
        copies: (u64, &'static str),
        uses: &mut HostUses,
    ) {
        let key = format!("{path}.entries");
        uses.add(key, self.entries.into(), "entries", slot_bytes, copies);
    }
}

/// Most page walkers a core may have: the earliest free one is searched for on every walk.
/// Cores have 2 to 16; 4096, the bound of `core.rob_size`, is more than the walks of the
/// instructions in flight could keep busy.
pub const MAX_WALKERS: u32 = 4096;

/// `[mmu]`: the TLB levels and walkers every scheme has (a scheme's own structures, such as
/// page-walk caches or a range TLB, are configured in its `[schemes.<name>]` section).
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
    /// Whose walkers a core's walks use (`mmu.walker_sharing`): its own (the default, left
    /// out of the resolved config), or an IOMMU's, shared by the cores of a socket or of the
    /// whole system.
    #[serde(default, skip_serializing_if = "WalkerSharing::is_core")]
    pub walker_sharing: WalkerSharing,
    /// Whether an access that finds its translation in a TLB while the walk that put it there
    /// is still in flight waits for that walk's end (`true`, as a TLB's MSHR merges a second
    /// miss to a page being walked), or uses it at once (`false`, the default, left out of the
    /// resolved config): the TLBs are filled when the walk is simulated, which in simulated
    /// time is when it starts.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wait_for_walks: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `mmu.walker_sharing`: where the page walkers are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WalkerSharing {
    /// `mmu.walkers` walkers in each core's MMU.
    #[default]
    Core,
    /// An IOMMU on each socket with `mmu.walkers` walkers, shared by the socket's cores.
    Socket,
    /// One IOMMU, on socket 0, with `mmu.walkers` walkers, shared by every core.
    System,
}

impl WalkerSharing {
    pub fn is_core(&self) -> bool {
        *self == WalkerSharing::Core
    }
}

impl Validate for MmuConfig {
    fn validate(&self) -> Result<()> {
        if !(1..=MAX_WALKERS).contains(&self.walkers) {
            return Err(Error::config(
                "mmu.walkers",
                format!("must be 1 to {MAX_WALKERS}, got {}", self.walkers),
            ));
        }
        self.itlb.validate("mmu.itlb")?;
        for (name, t) in &self.l1tlb {
            t.validate(&format!("mmu.l1tlb.{name}"))?;
        }
        for (name, t) in &self.l2tlb {
            t.validate(&format!("mmu.l2tlb.{name}"))?;
        }
        Ok(())
    }
}
