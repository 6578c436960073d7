//! `RmmTable`: the page table of an RMM process. Redundant, as the name says: every page is
//! mapped in an ordinary radix table (what page walks read) *and* covered by a range of the
//! range table (what the range-table walker reads), both kept in simulated memory.

use super::range_table::{Range, RangeTable, RangeTableStats};
use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::Result;
use crate::pt::radix::RadixPageTable;
use crate::pt::{PageTable, PtContext};

pub struct RmmTable {
    pub radix: RadixPageTable,
    pub ranges: RangeTable,
}

impl RmmTable {
    /// A new, empty table: a radix table of `levels` and a range table whose nodes hold at
    /// most `node_entries` ranges.
    pub fn new(ctx: &mut PtContext, levels: u32, node_entries: u32) -> Result<RmmTable> {
        Ok(RmmTable {
            radix: RadixPageTable::new(ctx, levels)?,
            ranges: RangeTable::new(ctx, node_entries)?,
        })
    }
}

impl PageTable for RmmTable {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        self.radix.map(ctx, vpn, pfn, size)?;
        // A huge page is `base_pages` consecutive 4 KiB pages on consecutive frames: one
        // stretch of a range like any other.
        let end = vpn.0 + size.base_pages();
        self.ranges.add(ctx, vpn.0, end, pfn.0.wrapping_sub(vpn.0))
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        let pfn = self.radix.unmap(ctx, vpn, size)?;
        // Only a split's node allocation can fail (memory full). What is lost then is the
        // range of the pages after the hole, which page walks still translate: never a wrong
        // translation, and the next fault reports the full memory.
        let _ = self.ranges.remove(ctx, vpn.0, vpn.0 + size.base_pages());
        Some(pfn)
    }

    fn bytes(&self) -> u64 {
        self.radix.bytes() + self.ranges.bytes()
    }

    fn stats(&self) -> Option<serde_json::Value> {
        let s: RangeTableStats = self.ranges.stats();
        Some(serde_json::json!({ "range_table": s }))
    }

    /// Corrupts both translations of the page: its radix leaf (page walks) and the offset of
    /// the range covering it (range-table walks), so whichever path translates it is wrong.
    fn corrupt(&self, store: &mut crate::pt::store::PtStore, vpn: Vpn, size: PageSize) -> bool {
        let leaf = self.radix.corrupt(store, vpn, size);
        let range = self.ranges.corrupt(store, vpn.0);
        leaf || range
    }

    fn va_bits(&self) -> u32 {
        self.radix.va_bits()
    }
}

impl RmmTable {
    /// The range containing `vpn` (no timing; tests and checks).
    pub fn range_of(&self, store: &crate::pt::store::PtStore, vpn: u64) -> Option<Range> {
        self.ranges.lookup(store, vpn)
    }
}
