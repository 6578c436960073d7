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
use crate::assoc::{Replacement, SetAssoc};
use crate::mem::{Hierarchy, Level, MemKind};
use crate::mmu::StageHit;
use crate::pt::store::PtStore;
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
pub struct MetaCache {
    lines: SetAssoc<()>,
    pub stats: MetaCacheStats,
}

impl MetaCache {
    /// Host bytes of one line's slot (config host-memory checks).
    pub const SLOT_BYTES: u64 = SetAssoc::<()>::SLOT_BYTES;

    pub fn new(bytes: u64) -> MetaCache {
        let lines = (bytes / 64) as usize;
        MetaCache {
            lines: SetAssoc::new(1, lines, Replacement::Lru),
            stats: MetaCacheStats::default(),
        }
    }

    /// Whether the line is cached; a miss fills it.
    #[inline]
    fn access(&mut self, key: u64) -> bool {
        if self.lines.lookup(0, key).is_some() {
            self.stats.hits += 1;
            true
        } else {
            self.stats.misses += 1;
            self.lines.insert(0, key, ());
            false
        }
    }

    fn invalidate(&mut self, key: u64) {
        self.lines.invalidate(0, key);
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
