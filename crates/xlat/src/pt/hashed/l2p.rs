//! The Logical-to-Physical (L2P) table (ME-HPT §IV-A, §V-A): a small MMU-resident table per
//! process that points to the chunks of every HPT way. A way's logical line index splits into
//! a chunk number (shift) and an offset (mask); the chunk number indexes the way's subtable.
//!
//! Layout with stealing (Fig 6): per way, the 4K, 1G and 2M subtables of `n` entries each lie
//! contiguously in one `3n` array, 1G in the middle. The 4K subtable grows upward from entry 0,
//! the 2M one downward from entry `3n-1`. When 4K (or 2M) needs more than `n` entries and the
//! 1G subtable is empty, it takes the whole middle and can grow to `2n`; a later 1G need then
//! takes entries from the far (most significant) end of the other small-page subtable, which
//! loses them. Without stealing every subtable has exactly `n` entries.

use crate::addr::{PageSize, Pfn};
use crate::error::{Error, Result};

#[derive(Clone, Debug)]
struct WaySubtables {
    /// Chunk base frames, `3n` entries; `None` = unused.
    slots: Vec<Option<Pfn>>,
    /// Entries in use by each page size (logical entries `0..used`).
    used: [usize; 3],
    /// The small-page size that took the 1G subtable's entries, if any.
    middle_owner: Option<PageSize>,
}

#[derive(Clone, Debug)]
pub struct L2pTable {
    per_subtable: usize,
    stealing: bool,
    ways: Vec<WaySubtables>,
    peak_used: usize,
}

impl L2pTable {
    pub fn new(ways: usize, per_subtable: usize, stealing: bool) -> L2pTable {
        L2pTable {
            per_subtable,
            stealing,
            ways: (0..ways)
                .map(|_| WaySubtables {
                    slots: vec![None; 3 * per_subtable],
                    used: [0; 3],
                    middle_owner: None,
                })
                .collect(),
            peak_used: 0,
        }
    }

    /// Entries per subtable (`n`).
    pub fn per_subtable(&self) -> usize {
        self.per_subtable
    }

    /// The other small-page size (4K <-> 2M).
    fn other_small(size: PageSize) -> PageSize {
        match size {
            PageSize::Size4K => PageSize::Size2M,
            _ => PageSize::Size4K,
        }
    }

    /// The most entries `size` could use in `way`, given what the other sizes use now.
    pub fn capacity(&self, way: usize, size: PageSize) -> usize {
        let n = self.per_subtable;
        let w = &self.ways[way];
        let used_1g = w.used[PageSize::Size1G.index()];
        match size {
            PageSize::Size1G => match w.middle_owner {
                None => n,
                Some(owner) => n - w.used[Self::other_small(owner).index()],
            },
            small => match w.middle_owner {
                Some(o) if o == small => 2 * n,
                // The other small size owns the middle: 1G takes this subtable's far end.
                Some(_) => n - used_1g,
                None if self.stealing && used_1g == 0 => 2 * n,
                None => n,
            },
        }
    }

    /// Entries `size` uses in `way`.
    pub fn used(&self, way: usize, size: PageSize) -> usize {
        self.ways[way].used[size.index()]
    }

    /// Entries in use over all ways and sizes.
    pub fn total_used(&self) -> usize {
        self.ways.iter().map(|w| w.used.iter().sum::<usize>()).sum()
    }

    /// The most entries ever in use at once.
    pub fn peak_used(&self) -> usize {
        self.peak_used
    }

    /// Array position of logical entry `k` of `size`'s subtable in `way`.
    fn slot(&self, way: usize, size: PageSize, k: usize) -> usize {
        let n = self.per_subtable;
        match (size, self.ways[way].middle_owner) {
            (PageSize::Size4K, _) => k,
            (PageSize::Size2M, _) => 3 * n - 1 - k,
            (PageSize::Size1G, None) => n + k,
            // 4K owns the middle: 1G takes 2M's far end, growing upward.
            (PageSize::Size1G, Some(PageSize::Size4K)) => 2 * n + k,
            (PageSize::Size1G, Some(_)) => n - 1 - k,
        }
    }

    /// The chunk base at logical entry `k` of `size`'s subtable in `way` (what the MMU reads
    /// after the shift).
    pub fn entry(&self, way: usize, size: PageSize, k: usize) -> Option<Pfn> {
        if k >= self.used(way, size) {
            return None;
        }
        self.ways[way].slots[self.slot(way, size, k)]
    }

    /// Resize `size`'s subtable in `way` to `count` entries (new entries unset, dropped entries
    /// cleared), taking or returning the 1G entries as §V-A describes.
    pub fn set_used(&mut self, way: usize, size: PageSize, count: usize) -> Result<()> {
        if count > self.capacity(way, size) {
            return Err(Error::OutOfMemory(format!(
                "L2P subtable of way {way} for {size} pages: {count} entries needed, {} available",
                self.capacity(way, size)
            )));
        }
        let n = self.per_subtable;
        let old = self.used(way, size);
        for k in count..old {
            let s = self.slot(way, size, k);
            self.ways[way].slots[s] = None;
        }
        let w = &mut self.ways[way];
        w.used[size.index()] = count;
        if size != PageSize::Size1G {
            if count > n {
                w.middle_owner = Some(size);
            } else if w.middle_owner == Some(size) && w.used[PageSize::Size1G.index()] == 0 {
                w.middle_owner = None;
            }
        }
        self.peak_used = self.peak_used.max(self.total_used());
        Ok(())
    }

    /// Point logical entry `k` (in use) of `size`'s subtable in `way` at a chunk.
    pub fn set_entry(&mut self, way: usize, size: PageSize, k: usize, chunk: Option<Pfn>) {
        assert!(
            k < self.used(way, size),
            "L2P entry {k} beyond the subtable"
        );
        let s = self.slot(way, size, k);
        self.ways[way].slots[s] = chunk;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PageSize::*;

    #[test]
    fn stealing_follows_fig6() {
        let mut t = L2pTable::new(1, 32, true);
        // (a) 4K and 2M use two entries each, from opposite ends.
        t.set_used(0, Size4K, 2).unwrap();
        t.set_used(0, Size2M, 2).unwrap();
        t.set_entry(0, Size4K, 1, Some(Pfn(10)));
        t.set_entry(0, Size2M, 1, Some(Pfn(20)));
        assert_eq!(t.ways[0].slots[1], Some(Pfn(10)));
        assert_eq!(t.ways[0].slots[94], Some(Pfn(20)));
        // (b) 4K takes the unused 1G entries and grows to 64.
        assert_eq!(t.capacity(0, Size4K), 64);
        t.set_used(0, Size4K, 64).unwrap();
        assert!(t.set_used(0, Size4K, 65).is_err());
        // (c) a 1G need takes the most significant 2M entries.
        assert_eq!(t.capacity(0, Size1G), 30);
        t.set_used(0, Size1G, 1).unwrap();
        t.set_entry(0, Size1G, 0, Some(Pfn(30)));
        assert_eq!(t.ways[0].slots[64], Some(Pfn(30)));
        assert_eq!(t.capacity(0, Size2M), 31);
        assert_eq!(t.peak_used(), 67);
    }

    #[test]
    fn without_stealing_each_subtable_has_its_own() {
        let mut t = L2pTable::new(3, 32, false);
        assert_eq!(t.capacity(2, Size4K), 32);
        assert!(t.set_used(2, Size4K, 33).is_err());
        t.set_used(2, Size1G, 32).unwrap();
        assert_eq!(t.capacity(2, Size2M), 32);
        // With stealing but the 1G subtable in use, nothing can be taken.
        let mut s = L2pTable::new(1, 32, true);
        s.set_used(0, Size1G, 1).unwrap();
        assert_eq!(s.capacity(0, Size4K), 32);
    }
}
