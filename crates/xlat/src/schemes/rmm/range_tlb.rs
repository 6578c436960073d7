//! The range TLB of RMM (Karakostas et al. ISCA'15): a small fully associative cache of range
//! translations, looked up in parallel with the L2 TLB. A hit yields the 4 KiB translation of
//! the page (`vpn + offset`), which fills the L1 TLB like an L2 TLB hit.

use super::range_table::Range;
use crate::assoc::Replacement;
use crate::mmu::tlb::{Key, TlbArray, TlbEntry};
use serde::Serialize;

/// A range entry: every range of an address space is stored under the ASID's tag in the one
/// set, and answers the pages it covers once it has arrived.
#[derive(Clone, Copy, Debug, Default)]
struct RangeEntry {
    range: Range,
    /// Cycle the range-table walk that fetched it ended: a lookup before that misses.
    ready: u64,
}

/// A lookup of page `vpn` of `asid` at cycle `now`.
#[derive(Clone, Copy, Debug)]
struct RangeProbe {
    vpn: u64,
    asid: u16,
    now: u64,
}

impl TlbEntry for RangeEntry {
    type Probe = RangeProbe;

    #[inline(always)]
    fn key(p: &RangeProbe) -> Key {
        Key {
            index: 0,
            tag: p.asid as u64,
        }
    }

    #[inline(always)]
    fn answers(&self, p: &RangeProbe) -> bool {
        self.range.contains(p.vpn) && self.ready <= p.now
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RangeTlbStats {
    /// Lookups (every L1 TLB miss) that found a range covering the page.
    pub hits: u64,
    pub misses: u64,
    /// Ranges installed after range-table walks, and valid ranges they evicted (LRU).
    pub fills: u64,
    pub evictions: u64,
    /// Ranges dropped by shootdowns of a page inside them.
    pub invalidations: u64,
}

/// Fully associative (one set), LRU. A lookup compares every entry, as the hardware's
/// parallel comparators do: 32 entries (Utopia Table 1) make that a short scan.
pub struct RangeTlb {
    entries: TlbArray<RangeEntry>,
    pub stats: RangeTlbStats,
}

impl RangeTlb {
    /// Host bytes of one entry (config host-memory checks).
    pub const SLOT_BYTES: u64 = TlbArray::<RangeEntry>::SLOT_BYTES;

    pub fn new(capacity: usize) -> RangeTlb {
        RangeTlb {
            entries: TlbArray::new(1, capacity, Replacement::Lru),
            stats: RangeTlbStats::default(),
        }
    }

    /// The range of `asid` covering `vpn` at cycle `now`, if one is cached and has arrived.
    #[inline]
    pub fn lookup(&mut self, vpn: u64, asid: u16, now: u64) -> Option<Range> {
        match self.entries.find(&RangeProbe { vpn, asid, now }) {
            Some(e) => {
                self.stats.hits += 1;
                Some(e.range)
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Install `range` of `asid`, usable from cycle `ready`. If it is cached already, it stays
    /// usable from the earlier of the two cycles: walks queue for the walkers and end out of
    /// issue order, and a later fill of the same range must not hide the one before. Cached
    /// ranges of `asid` that it overlaps are older views of it (a range grows as pages are
    /// mapped) and are replaced; otherwise the least recently used entry makes room.
    pub fn insert(&mut self, asid: u16, range: Range, ready: u64) {
        let probe = RangeProbe {
            vpn: range.base,
            asid,
            now: u64::MAX,
        };
        if let Some(e) = self.entries.find_with(&probe, |e| e.range == range) {
            e.ready = e.ready.min(ready);
            return;
        }
        self.entries.invalidate_where(|tag, e| {
            tag == asid as u64 && e.range.base < range.end && range.base < e.range.end
        });
        if self
            .entries
            .insert_absent(&probe, RangeEntry { range, ready })
            .is_some()
        {
            self.stats.evictions += 1;
        }
        self.stats.fills += 1;
    }

    /// Drop the ranges of `asid` overlapping the pages `[start, end)` (a shootdown).
    pub fn invalidate(&mut self, asid: u16, start: u64, end: u64) {
        let dropped = self.entries.invalidate_where(|tag, e| {
            tag == asid as u64 && e.range.base < end && start < e.range.end
        });
        self.stats.invalidations += dropped as u64;
    }

    pub fn flush(&mut self) {
        self.entries.flush();
    }

    /// Ranges cached now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
