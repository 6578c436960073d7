//! The RestSeg walk (RSW, Utopia §5.2, §5.7): on an L1 TLB miss, in parallel with the L2 TLB,
//! the MMU looks the page up in every RestSeg. Per segment it reads the set's SF counter
//! through the SF cache and, unless the counter is zero, the set's TAR line through the TAR
//! cache (§5.7.1: two 2 KB caches of 2 cycles); a miss there reads the line through the
//! cache hierarchy like a page-walk reference, tagged `sf` / `tar`. A tag match gives the
//! frame directly (`base + set × ways + way`) and aborts the L2 TLB and the FlexSeg walk; a
//! miss in every segment lets the FlexSeg walk start once the RSW has answered (§5.7.2).
//!
//! An L2 TLB hit aborts the RSW (§5.7.2; Fig 18 counts no TAR request "which hit in the L2
//! TLB"): the L2 TLB answers in the cycles the SF and TAR caches are read, so this model
//! sends none of that RSW's reads to memory and counts it as `aborted`, not as a walk.
//!
//! The SF read and the TAR read go out together; when the SF counter is zero the TAR read is
//! aborted (§5.2, Fig 8), which this model takes to mean it is never sent past the TAR cache,
//! and the RSW of that segment ends with the SF read.

use super::restseg::Layout;
use super::table::UtopiaTable;
use crate::addr::{PageSize, PhysAddr, Vpn};
use crate::mem::{Hierarchy, Level, MemKind};
use crate::mmu::StageHit;
use crate::pt::store::PtStore;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// Hits and misses of one of the two metadata caches.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct MetaCacheStats {
    pub hits: u64,
    pub misses: u64,
}

/// The SF cache or the TAR cache: 64-byte lines of one process's SF or TAR, fully
/// associative and LRU (the paper gives size and latency only). Lines are tagged by process,
/// segment and line index, as the MMU knows them from its base registers.
///
/// A fully associative LRU array's contents are the most recently used lines that fit, which
/// slot holds each being immaterial: it is kept as a map from each cached line to its place in
/// a recency list, so a lookup costs the same at 32 lines as at 64K (a 4 MiB cache that holds
/// a 2 GB RestSeg's whole TAR), where a search of every way would cost a pass over them all.
pub struct MetaCache {
    capacity: usize,
    /// Each cached line's node in `nodes`.
    slot_of: FxHashMap<u64, u32>,
    /// The recency list: `nodes[HEAD]` is a sentinel whose `next` is the most recently used
    /// line and whose `prev` the least.
    nodes: Vec<Node>,
    /// Nodes of invalidated lines, reused before the least recently used line is evicted.
    free: Vec<u32>,
    pub stats: MetaCacheStats,
}

#[derive(Clone, Copy)]
struct Node {
    key: u64,
    prev: u32,
    next: u32,
}

const HEAD: u32 = 0;

impl MetaCache {
    /// Host bytes of one line (config host-memory checks): its node, and its map entry (key
    /// and node index) counted twice for the map's spare capacity.
    pub const SLOT_BYTES: u64 = (std::mem::size_of::<Node>()
        + 2 * (std::mem::size_of::<u64>() + std::mem::size_of::<u32>()))
        as u64;

    pub fn new(bytes: u64) -> MetaCache {
        MetaCache {
            capacity: (bytes / 64) as usize,
            slot_of: FxHashMap::default(),
            nodes: vec![Node {
                key: 0,
                prev: HEAD,
                next: HEAD,
            }],
            free: Vec::new(),
            stats: MetaCacheStats::default(),
        }
    }

    fn unlink(&mut self, n: u32) {
        let Node { prev, next, .. } = self.nodes[n as usize];
        self.nodes[prev as usize].next = next;
        self.nodes[next as usize].prev = prev;
    }

    fn push_front(&mut self, n: u32) {
        let first = self.nodes[HEAD as usize].next;
        self.nodes[n as usize].prev = HEAD;
        self.nodes[n as usize].next = first;
        self.nodes[first as usize].prev = n;
        self.nodes[HEAD as usize].next = n;
    }

    /// Whether the line is cached; a miss fills it, in place of the least recently used line
    /// when the cache is full.
    #[inline]
    fn access(&mut self, key: u64) -> bool {
        if let Some(&n) = self.slot_of.get(&key) {
            self.stats.hits += 1;
            if self.nodes[HEAD as usize].next != n {
                self.unlink(n);
                self.push_front(n);
            }
            return true;
        }
        self.stats.misses += 1;
        let n = if let Some(n) = self.free.pop() {
            n
        } else if self.nodes.len() <= self.capacity {
            self.nodes.push(Node {
                key,
                prev: HEAD,
                next: HEAD,
            });
            (self.nodes.len() - 1) as u32
        } else {
            let lru = self.nodes[HEAD as usize].prev;
            self.unlink(lru);
            self.slot_of.remove(&self.nodes[lru as usize].key);
            lru
        };
        self.nodes[n as usize].key = key;
        self.push_front(n);
        self.slot_of.insert(key, n);
        false
    }

    fn invalidate(&mut self, key: u64) {
        if let Some(n) = self.slot_of.remove(&key) {
            self.unlink(n);
            self.free.push(n);
        }
    }
}

/// The key of line `line` of a segment's SF or TAR of process `asid`.
#[inline]
fn line_key(asid: u16, seg: usize, line: u64) -> u64 {
    (u64::from(asid) << 48) | ((seg as u64) << 40) | line
}

/// RestSeg walks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RswStats {
    /// Walks (one per L1 TLB miss the L2 TLB did not serve), each looking in every segment.
    pub walks: u64,
    /// L1 TLB misses the L2 TLB served, whose RSW was aborted before it read memory.
    pub aborted: u64,
    /// Walks that found the page in a RestSeg.
    pub hits: u64,
    /// Segment lookups that ended at a zero SF counter (no TAR read).
    pub sf_filtered: u64,
    /// Segment lookups that read the TAR and found no matching tag.
    pub tag_misses: u64,
    /// Cycles of all walks (the slowest segment of a miss, the hitting one of a hit).
    pub cycles: u64,
    /// SF and TAR lines read from the cache hierarchy, by the level that served them.
    pub refs: u64,
    pub by_level: BTreeMap<&'static str, u64>,
}

/// The RestSeg walker of one core, with its SF and TAR caches.
pub struct RestSegWalker {
    layout: Layout,
    sf_cache: MetaCache,
    tar_cache: MetaCache,
    cache_latency: u64,
    /// Where SF and TAR reads enter the cache hierarchy (the page walker's entry).
    entry: Level,
    stats: RswStats,
    by_level: [u64; 4],
}

impl RestSegWalker {
    pub fn new(
        layout: Layout,
        sf_bytes: u64,
        tar_bytes: u64,
        latency: u64,
        entry: Level,
    ) -> RestSegWalker {
        RestSegWalker {
            layout,
            sf_cache: MetaCache::new(sf_bytes),
            tar_cache: MetaCache::new(tar_bytes),
            cache_latency: latency,
            entry,
            stats: RswStats::default(),
            by_level: [0; 4],
        }
    }

    /// Read one SF or TAR line at cycle `now` through its cache; returns the cycles it took.
    #[inline]
    fn read(&mut self, tar: bool, key: u64, addr: PhysAddr, now: u64, mem: &mut Hierarchy) -> u64 {
        let (cache, kind) = if tar {
            (&mut self.tar_cache, MemKind::TAR)
        } else {
            (&mut self.sf_cache, MemKind::SF)
        };
        if cache.access(key) {
            return self.cache_latency;
        }
        let at = now + self.cache_latency;
        let (latency, level) = mem.access(addr, kind, false, at, self.entry);
        self.by_level[level as usize] += 1;
        self.stats.refs += 1;
        self.cache_latency + latency
    }

    /// Walk every RestSeg of process `asid` for `vpn` at cycle `now`: the page's frame if a
    /// segment holds it, and the cycles the walk took.
    pub fn walk(
        &mut self,
        vpn: Vpn,
        asid: u16,
        table: &UtopiaTable,
        store: &PtStore,
        now: u64,
        mem: &mut Hierarchy,
    ) -> (Option<StageHit>, u64) {
        self.stats.walks += 1;
        let mut slowest = 0;
        for ps in &table.segs {
            let seg = &ps.seg;
            let (set, tag) = seg.index(vpn);
            let sf_line = seg.sf_line(set);
            let sf_addr = PhysAddr(ps.sf.0 + sf_line * 64);
            let sf_latency = self.read(false, line_key(asid, seg.id, sf_line), sf_addr, now, mem);
            if ps.sf_count(store, set) == 0 {
                self.stats.sf_filtered += 1;
                slowest = slowest.max(sf_latency);
                continue;
            }
            let tar_line = seg.tar_line(set);
            let tar_addr = PhysAddr(ps.tar.0 + tar_line * 64);
            let tar_key = line_key(asid, seg.id, tar_line);
            let latency = sf_latency.max(self.read(true, tar_key, tar_addr, now, mem));
            match ps.find(store, set, tag) {
                Some(way) => {
                    self.stats.hits += 1;
                    self.stats.cycles += latency;
                    let hit = StageHit {
                        pfn: seg.slot_pfn(set, way),
                        size: seg.page,
                        latency,
                    };
                    return (Some(hit), latency);
                }
                None => {
                    self.stats.tag_misses += 1;
                    slowest = slowest.max(latency);
                }
            }
        }
        self.stats.cycles += slowest;
        (None, slowest)
    }

    /// The L2 TLB had the translation: this L1 TLB miss's RSW stops before reading memory.
    #[inline]
    pub fn abort(&mut self) {
        self.stats.aborted += 1;
    }

    /// A RestSeg shootdown (§6.1): drop the SF and TAR lines of `vpn`'s sets in the segments
    /// of page size `size`, so the next walk reads them afresh.
    pub fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16) {
        for seg in self.layout.of_size(size) {
            let (set, _) = seg.index(vpn);
            self.sf_cache
                .invalidate(line_key(asid, seg.id, seg.sf_line(set)));
            self.tar_cache
                .invalidate(line_key(asid, seg.id, seg.tar_line(set)));
        }
    }

    pub fn reset_stats(&mut self) {
        self.stats = RswStats::default();
        self.by_level = [0; 4];
        self.sf_cache.stats = MetaCacheStats::default();
        self.tar_cache.stats = MetaCacheStats::default();
    }

    pub fn stats(&self) -> RswStats {
        RswStats {
            by_level: Level::named_counts(self.by_level),
            ..self.stats.clone()
        }
    }

    pub fn sf_cache(&self) -> MetaCacheStats {
        self.sf_cache.stats
    }

    pub fn tar_cache(&self) -> MetaCacheStats {
        self.tar_cache.stats
    }
}

#[cfg(test)]
mod tests {
    use super::MetaCache;
    use crate::assoc::{Replacement, SetAssoc};
    use proptest::prelude::*;

    proptest! {
        /// The recency list hits and misses exactly as a fully associative LRU array of as
        /// many ways (the reference model), under fills, hits and invalidations.
        #[test]
        fn meta_cache_is_a_fully_associative_lru_array(
            lines in 1usize..12,
            ops in proptest::collection::vec((0u64..24, 0u8..8), 1..400),
        ) {
            let mut cache = MetaCache::new(64 * lines as u64);
            let mut model: SetAssoc<()> = SetAssoc::new(1, lines, Replacement::Lru);
            for (key, op) in ops {
                if op == 0 {
                    cache.invalidate(key);
                    model.invalidate(0, key);
                    continue;
                }
                let model_hit = model.lookup(0, key).is_some();
                if !model_hit {
                    model.insert(0, key, ());
                }
                prop_assert_eq!(cache.access(key), model_hit, "key {}", key);
            }
        }
    }
}
