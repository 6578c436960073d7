//! `radix`: the x86-64 radix page table (4 or 5 levels) walked through split page-walk caches,
//! the baseline of every paper. Its table and walker are also the paging path of schemes that
//! add structures around it (RMM, POM-TLB).

pub mod walker;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr};
use crate::assoc::Replacement;
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::config::TlbConfig;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, WalkEnv};
use crate::pt::radix::{Placement, RadixPageTable};
use crate::pt::PtContext;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use walker::RadixWalker;

/// `[schemes.radix]`: the radix table and its page-walk caches.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadixConfig {
    /// Radix levels: 4 (48-bit VA) or 5 (57-bit VA).
    pub levels: u32,
    /// Split page-walk caches, one per non-leaf level (PML4, PDPT, PD), each of this geometry
    /// unless `pwc_levels` gives its own; `entries = 0` removes them.
    pub pwc: TlbConfig,
    /// Per-level PWC geometry, by level name (`pd`, `pdpt`, `pml4`, `pml5`), replacing `pwc`
    /// for that level. A PML5-entry cache exists only if given here (and `levels = 5`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pwc_levels: BTreeMap<String, TlbConfig>,
    /// Where the table's entries are in physical memory: `x86` (default), or `champsim`,
    /// ChampSim's placement of one frame per entry (`src/vmem.cc`; docs/champsim.md).
    #[serde(default, skip_serializing_if = "Placement::is_x86")]
    pub placement: Placement,
}

impl Default for RadixConfig {
    /// Utopia Table 1: 4 levels, three 32-entry fully associative PWCs of 2 cycles.
    fn default() -> Self {
        RadixConfig {
            levels: 4,
            pwc: TlbConfig {
                entries: 32,
                ways: 32,
                latency: 2,
                replacement: Replacement::Lru,
                page_sizes: vec![PageSize::Size4K],
            },
            pwc_levels: BTreeMap::new(),
            placement: Placement::X86,
        }
    }
}

impl RadixConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if !(self.levels == 4 || self.levels == 5) {
            return Err(Error::config(
                format!("{path}.levels"),
                format!("must be 4 or 5, got {}", self.levels),
            ));
        }
        self.pwc.validate(&format!("{path}.pwc"))?;
        for (name, c) in &self.pwc_levels {
            if !walker::PWC_NAMES.contains(&name.as_str()) {
                return Err(Error::config(
                    format!("{path}.pwc_levels.{name}"),
                    format!(
                        "no such PWC level; expected one of {}",
                        walker::PWC_NAMES.join(", ")
                    ),
                ));
            }
            c.validate(&format!("{path}.pwc_levels.{name}"))?;
        }
        Ok(())
    }

    /// The PWCs of each core: `pwc` at each level `pwc_levels` does not give its own.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let slot = RadixWalker::PWC_SLOT_BYTES;
        // The levels whose geometry is `pwc` itself, as the walker is built.
        let shared = self
            .pwc_geometry()
            .iter()
            .filter(|c| c.is_some_and(|c| std::ptr::eq(c, &self.pwc)))
            .count() as u64;
        let copies = (shared * uses.cores(), "one per PWC level and core");
        self.pwc
            .host_use(&format!("{path}.pwc"), slot, copies, uses);
        let per_core = (uses.cores(), "one per core");
        for (name, c) in &self.pwc_levels {
            c.host_use(&format!("{path}.pwc_levels.{name}"), slot, per_core, uses);
        }
    }

    /// The PWC geometry of each level (`pd`, `pdpt`, `pml4`, `pml5`).
    pub fn pwc_geometry(&self) -> [Option<&TlbConfig>; 4] {
        walker::PWC_NAMES.map(|name| match self.pwc_levels.get(name) {
            Some(c) => Some(c),
            None if name != "pml5" => Some(&self.pwc),
            None => None,
        })
    }

    /// A walker with these PWCs.
    pub fn walker(&self) -> RadixWalker {
        RadixWalker::new(self.pwc_geometry())
    }

    /// A new, empty radix table.
    pub fn new_table(&self, pt: &mut PtContext) -> Result<RadixPageTable> {
        RadixPageTable::with_placement(pt, self.levels, self.placement)
    }
}

impl MmuScheme for RadixWalker {
    type Table = RadixPageTable;
    type Shared = ();

    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RadixPageTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.plan(va, asid, env.table, env.store, plan)
    }

    fn flush(&mut self) {
        RadixWalker::flush(self);
    }

    fn reset_stats(&mut self) {
        RadixWalker::reset_stats(self);
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::from([("pwc", stats_value(&self.pwc_snapshot()))])
    }
}

/// The radix baseline.
pub struct Radix;

impl Scheme for Radix {
    type Mmu = RadixWalker;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(ctx: &BuildCtx) -> Result<RadixWalker> {
        Ok(ctx.sections.radix.walker())
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }
}
