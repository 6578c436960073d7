//! `rmm`: Redundant Memory Mappings (Karakostas et al., ISCA'15), the RMM comparator of
//! Utopia (§7, Table 1: a 32-entry range lookaside buffer and an eager paging allocator).
//!
//! * **OS**: eager paging (`os.eager_paging`, set by the `rmm` preset) backs each VMA at its
//!   first fault in the largest free blocks, so it is physically contiguous in a few runs.
//!   Every page is still mapped in the radix table; on top of that, the process's range table
//!   ([`range_table`], a B-tree in simulated memory) holds the runs as range translations
//!   (base, limit, offset), kept exactly in step with the mappings ([`table::RmmTable`]).
//! * **MMU**: a fully associative range TLB ([`range_tlb`]) is looked up in parallel with the
//!   L2 TLB. When both miss, the radix walker walks the page table as on the baseline (its
//!   PWCs and all), and in the background the range-table walker reads the B-tree from root to
//!   leaf through the cache hierarchy and fills the range TLB with the range of the page.

pub mod range_table;
pub mod range_tlb;
pub mod table;
#[cfg(test)]
mod tests;

use super::radix::RadixWalker;
use super::{BuildCtx, Scheme, TableOf};
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn};
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::physmem::BuddyAllocator;
use crate::mem::{Hierarchy, Level, MemKind};
use crate::mmu::walk::WalkPlan;
use crate::mmu::{stats_value, MmuScheme, PageTables, StageHit, WalkEnv};
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use range_tlb::RangeTlb;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use table::RmmTable;

/// `[schemes.rmm]`: the range TLB and the range table. The paging path (radix levels, PWCs)
/// is `[schemes.radix]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RmmConfig {
    /// Range TLB entries, fully associative, LRU (Utopia Table 1: 32).
    pub range_tlb_entries: u32,
    /// Cycles of a range TLB lookup; it runs in parallel with the L2 TLB, so a hit costs the
    /// slower of the two. Default: the L2 TLB's 12 cycles of Utopia Table 1.
    pub range_tlb_latency: u32,
    /// Most ranges one 4 KiB range-table node holds: odd, 3..=127 (127 fills the frame).
    pub node_entries: u32,
}

impl Default for RmmConfig {
    fn default() -> Self {
        RmmConfig {
            range_tlb_entries: 32,
            range_tlb_latency: 12,
            node_entries: range_table::MAX_NODE_ENTRIES as u32,
        }
    }
}

/// More range TLB entries than this is no longer a TLB a lookup could scan.
const MAX_RANGE_TLB_ENTRIES: u32 = 4096;

impl RmmConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if !(1..=MAX_RANGE_TLB_ENTRIES).contains(&self.range_tlb_entries) {
            return Err(Error::config(
                format!("{path}.range_tlb_entries"),
                format!(
                    "must be in 1..={MAX_RANGE_TLB_ENTRIES}, got {}",
                    self.range_tlb_entries
                ),
            ));
        }
        range_table::check_node_entries(self.node_entries, &format!("{path}.node_entries"))?;
        Ok(())
    }

    /// The range TLB of each core.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        let key = format!("{path}.range_tlb_entries");
        uses.per_core(
            key,
            self.range_tlb_entries.into(),
            "entries",
            RangeTlb::SLOT_BYTES,
        );
    }
}

/// Range-table walks, all off the critical path (they overlap the page walk that missed).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RangeWalkStats {
    pub walks: u64,
    /// Walks that found no range for the page (none when the ranges follow the mappings).
    pub misses: u64,
    /// Memory references (64-byte lines read), and where each was served.
    pub refs: u64,
    pub by_level: BTreeMap<&'static str, u64>,
    /// Cycles from the walk's start to the range arriving in the range TLB.
    pub cycles: u64,
}

/// The MMU parts of RMM: the radix walker, the range TLB and the range-table walker.
pub struct RmmMmu {
    walker: RadixWalker,
    tlb: RangeTlb,
    tlb_latency: u64,
    /// Where range-table reads enter the cache hierarchy (the page walker's entry).
    entry: Level,
    walk: RangeWalkStats,
    by_level: [u64; 4],
    /// Lines of the current range walk (reused: no allocation per walk).
    lines: Vec<PhysAddr>,
}

impl RmmMmu {
    pub fn new(ctx: &BuildCtx) -> RmmMmu {
        let cfg = &ctx.sections.rmm;
        RmmMmu {
            walker: ctx.sections.radix.walker(),
            tlb: RangeTlb::new(cfg.range_tlb_entries as usize),
            tlb_latency: cfg.range_tlb_latency as u64,
            entry: ctx.mmu.walker_entry.level(),
            walk: RangeWalkStats::default(),
            by_level: [0; 4],
            lines: Vec::with_capacity(64),
        }
    }

    pub fn range_tlb(&self) -> &RangeTlb {
        &self.tlb
    }

    /// Walk the range table for `vpn` at cycle `now`, reading its nodes line by line through
    /// the caches (each read depends on the one before), and fill the range TLB.
    fn range_walk(
        &mut self,
        vpn: u64,
        asid: u16,
        table: &RmmTable,
        store: &PtStore,
        now: u64,
        mem: &mut Hierarchy,
    ) {
        self.lines.clear();
        let found = table.ranges.walk(store, vpn, &mut self.lines);
        let mut t = now;
        for &line in &self.lines {
            let (latency, level) = mem.access(line, MemKind::RANGE, false, t, self.entry);
            self.by_level[level as usize] += 1;
            t += latency;
        }
        self.walk.walks += 1;
        self.walk.refs += self.lines.len() as u64;
        self.walk.cycles += t - now;
        match found {
            Some(r) => self.tlb.insert(asid, r, t),
            None => self.walk.misses += 1,
        }
    }
}

impl MmuScheme for RmmMmu {
    type Table = RmmTable;
    type Shared = ();

    #[inline]
    fn side_lookup<P: PageTables<Table = RmmTable>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _l2_hit: bool,
        now: u64,
        _tables: &P,
        _mem: &mut Hierarchy,
        _: &mut (),
    ) -> (Option<StageHit>, u64) {
        let vpn = va.vpn().0;
        let hit = self.tlb.lookup(vpn, asid, now).map(|r| StageHit {
            pfn: r.frame(vpn),
            size: PageSize::Size4K,
            latency: self.tlb_latency,
        });
        (hit, self.tlb_latency)
    }

    #[inline]
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, RmmTable>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        self.walker
            .plan(va, asid, &env.table.radix, env.store, plan)
    }

    fn after_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        _pfn: Pfn,
        _size: PageSize,
        table: &RmmTable,
        store: &PtStore,
        now: u64,
        mem: &mut Hierarchy,
        _: &mut (),
    ) {
        self.range_walk(va.vpn().0, asid, table, store, now, mem);
    }

    fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16, _: &mut ()) {
        self.tlb.invalidate(asid, vpn.0, vpn.0 + size.base_pages());
    }

    /// Walk state only (the PWCs); the range TLB, like the L1 and L2 TLBs, is invalidated
    /// page by page.
    fn flush(&mut self) {
        self.walker.flush();
    }

    fn reset_stats(&mut self) {
        self.walker.reset_stats();
        self.tlb.stats = Default::default();
        self.walk = RangeWalkStats::default();
        self.by_level = [0; 4];
    }

    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        let walk = RangeWalkStats {
            by_level: Level::named_counts(self.by_level),
            ..self.walk.clone()
        };
        BTreeMap::from([
            ("pwc", stats_value(&self.walker.pwc_snapshot())),
            ("range_tlb", stats_value(&self.tlb.stats)),
            ("range_walk", stats_value(&walk)),
        ])
    }
}

/// Redundant Memory Mappings.
pub struct Rmm;

impl Scheme for Rmm {
    type Mmu = RmmMmu;

    fn shared(_: &BuildCtx, _: &mut BuddyAllocator) -> Result<()> {
        Ok(())
    }

    fn mmu(ctx: &BuildCtx) -> Result<RmmMmu> {
        Ok(RmmMmu::new(ctx))
    }

    fn new_table(ctx: &BuildCtx, pt: &mut PtContext, _pid: u16) -> Result<TableOf<Self>> {
        RmmTable::new(pt, ctx.sections.radix.levels, ctx.sections.rmm.node_entries)
    }
}
