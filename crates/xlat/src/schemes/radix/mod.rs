//! `radix`: the x86-64 radix page table (4 or 5 levels) walked through split page-walk caches,
//! the baseline of every paper. Its table and walker are also the paging path of schemes that
//! add structures around it (RMM, POM-TLB).

pub mod walker;

use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, VirtAddr};
use crate::assoc::Replacement;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mmu::config::TlbConfig;
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme};
use crate::pt::radix::RadixPageTable;
use crate::pt::store::PtStore;
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
    /// Split page-walk caches, one per non-leaf level (PML4, PDPT, PD), each of this geometry;
    /// `entries = 0` removes them.
    pub pwc: TlbConfig,
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
        self.pwc.validate(&format!("{path}.pwc"))
    }

    /// A new, empty radix table.
    pub fn new_table(&self, pt: &mut PtContext) -> Result<RadixPageTable> {
        RadixPageTable::new(pt, self.levels)
    }
}

impl MmuScheme for RadixWalker {
    type Table = RadixPageTable;

    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        table: &RadixPageTable,
        store: &PtStore,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.plan(va, asid, table, store, plan)
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

    fn mmu(ctx: &BuildCtx, _: &mut BuddyAllocator) -> Result<RadixWalker> {
        Ok(RadixWalker::new(&ctx.sections.radix.pwc))
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        ctx.sections.radix.new_table(pt)
    }
}
