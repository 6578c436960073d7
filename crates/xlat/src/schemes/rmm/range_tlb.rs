//! The range TLB of RMM (Karakostas et al. ISCA'15): a small fully associative cache of range
//! translations, looked up in parallel with the L2 TLB. A hit yields the 4 KiB translation of
//! the page (`vpn + offset`), which fills the L1 TLB like an L2 TLB hit.

use super::range_table::Range;
use serde::Serialize;

#[derive(Clone, Copy, Debug)]
struct Entry {
    asid: u16,
    range: Range,
    /// Cycle the range-table walk that fetched it ended: a lookup before that misses.
    ready: u64,
    last_use: u64,
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

/// Fully associative, LRU. A lookup compares every entry, as the hardware's parallel
/// comparators do: 32 entries (Utopia Table 1) make that a short scan.
pub struct RangeTlb {
    entries: Vec<Entry>,
    capacity: usize,
    clock: u64,
    pub stats: RangeTlbStats,
}

impl RangeTlb {
    pub fn new(capacity: usize) -> RangeTlb {
        RangeTlb {
            entries: Vec::with_capacity(capacity),
            capacity,
            clock: 0,
            stats: RangeTlbStats::default(),
        }
    }

    /// The range of `asid` covering `vpn` at cycle `now`, if one is cached and has arrived.
    #[inline]
    pub fn lookup(&mut self, vpn: u64, asid: u16, now: u64) -> Option<Range> {
        self.clock += 1;
        let clock = self.clock;
        match self
            .entries
            .iter_mut()
            .find(|e| e.asid == asid && e.range.contains(vpn) && e.ready <= now)
        {
            Some(e) => {
                e.last_use = clock;
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
        self.clock += 1;
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.asid == asid && e.range == range)
        {
            e.ready = e.ready.min(ready);
            e.last_use = self.clock;
            return;
        }
        self.entries
            .retain(|e| !(e.asid == asid && e.range.base < range.end && range.base < e.range.end));
        if self.entries.len() == self.capacity {
            let victim = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_use)
                .map(|(i, _)| i)
                .expect("a full TLB has entries");
            self.entries.swap_remove(victim);
            self.stats.evictions += 1;
        }
        self.entries.push(Entry {
            asid,
            range,
            ready,
            last_use: self.clock,
        });
        self.stats.fills += 1;
    }

    /// Drop the ranges of `asid` overlapping the pages `[start, end)` (a shootdown).
    pub fn invalidate(&mut self, asid: u16, start: u64, end: u64) {
        let before = self.entries.len();
        self.entries
            .retain(|e| !(e.asid == asid && e.range.base < end && start < e.range.end));
        self.stats.invalidations += (before - self.entries.len()) as u64;
    }

    pub fn flush(&mut self) {
        self.entries.clear();
    }

    /// Ranges cached now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
