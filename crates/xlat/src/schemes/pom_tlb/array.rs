//! The POM-TLB array: a set-associative TLB whose entries live in DRAM (Ryoo et al., ISCA'17).
//!
//! The array occupies one contiguous physical block taken from the buddy allocator at boot.
//! Set `s` is the `ways * entry_bytes` bytes at `base + s * set_bytes`, so a set is one or more
//! whole 64-byte lines (several sets share a line when a set is smaller than one). Way `w` of a
//! set sits `w * entry_bytes` bytes into it. The entries themselves are held in a [`SetAssoc`]
//! keyed exactly as the DRAM entries are tagged (page number at its size, the size, the ASID),
//! so what a probe finds is what the lines it read hold.
//!
//! Page sizes share the one array, each entry tagged with its size and placed in the set its own
//! page number selects. A lookup does not know the page size, so it probes the set of every size
//! that has at least one valid entry, all in parallel (the paper's page-size predictor picks one
//! partition first; probing all the live ones costs more cache traffic and never a second
//! round trip). An entry is never splintered: a 2 MiB page is held as one 2 MiB entry.

use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn, LINE_BYTES};
use crate::assoc::Replacement;
use crate::mem::{Hierarchy, Level, MemKind};
use crate::mmu::tlb::{PageEntry, PageProbe, TlbArray};
use serde::Serialize;

/// Where the lines a structure read were served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByLevel {
    pub l1: u64,
    pub l2: u64,
    pub llc: u64,
    pub dram: u64,
}

impl ByLevel {
    fn count(&mut self, level: Level) {
        match level {
            Level::L1d => self.l1 += 1,
            Level::L2 => self.l2 += 1,
            Level::Llc => self.llc += 1,
            Level::Dram => self.dram += 1,
        }
    }
}

/// The `mmu.pom_tlb` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PomTlbStats {
    /// Lookups after an L2 TLB miss, and how they ended.
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    /// Translations a walk found and the array took in, and the valid entries they evicted.
    pub fills: u64,
    pub evictions: u64,
    /// Entries dropped by shootdowns.
    pub invalidations: u64,
    /// 64-byte lines the lookups read, and where they were served.
    pub line_reads: u64,
    pub by_level: ByLevel,
    /// Lines the fills wrote (off the critical path).
    pub line_writes: u64,
    /// Cycles lookups spent reading sets (hit or miss): what the L3 level adds to the
    /// translations that reach it.
    pub probe_cycles: u64,
}

/// The stats subtree: the counters and the valid entries at the time of the snapshot.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PomTlbSnapshot {
    #[serde(flatten)]
    pub counters: PomTlbStats,
    pub valid_entries: u64,
}

/// The shape of the array in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Sets and ways (powers of two; config validation guarantees it).
    pub sets: u64,
    pub ways: u64,
    /// Bytes of one entry in DRAM (a power of two of at most one line).
    pub entry_bytes: u64,
}

impl Geometry {
    /// Bytes of one set.
    pub fn set_bytes(&self) -> u64 {
        self.ways * self.entry_bytes
    }

    /// Bytes of the whole array.
    pub fn bytes(&self) -> u64 {
        self.sets * self.set_bytes()
    }

    /// Lines one lookup of a set reads: the set's own lines, or the one line it shares.
    pub fn lines_per_set(&self) -> u64 {
        self.set_bytes().div_ceil(LINE_BYTES)
    }
}

pub struct PomTlbArray {
    geometry: Geometry,
    /// First byte of the block the array occupies.
    base: PhysAddr,
    /// The entries the DRAM lines hold, tagged as the on-chip TLBs tag theirs (page number at
    /// its size, the size, the ASID).
    entries: TlbArray<PageEntry>,
    /// Cache level the lookups and fills enter the hierarchy at.
    entry_level: Level,
    /// Valid entries of each page size: a size with none is not probed (the MMU fills and
    /// evicts every entry itself, so it can count them).
    valid: [u64; 3],
    pub stats: PomTlbStats,
}

impl PomTlbArray {
    /// An empty array of `geometry` occupying the block at `base` (line-aligned, at least
    /// `geometry.bytes()` long), read and written from cache level `entry_level`.
    pub fn new(
        geometry: Geometry,
        replacement: Replacement,
        base: PhysAddr,
        entry_level: Level,
    ) -> PomTlbArray {
        debug_assert!(base.0.is_multiple_of(LINE_BYTES));
        PomTlbArray {
            geometry,
            base,
            entries: TlbArray::new(geometry.sets as usize, geometry.ways as usize, replacement),
            entry_level,
            valid: [0; 3],
            stats: PomTlbStats::default(),
        }
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn base(&self) -> PhysAddr {
        self.base
    }

    /// Physical address of the byte where `way` of `set` starts.
    #[inline]
    fn entry_addr(&self, set: usize, way: u64) -> PhysAddr {
        PhysAddr(
            self.base.0 + set as u64 * self.geometry.set_bytes() + way * self.geometry.entry_bytes,
        )
    }

    /// Address of the first line holding `set`.
    #[inline]
    fn first_line(&self, set: usize) -> u64 {
        self.entry_addr(set, 0).0 & !(LINE_BYTES - 1)
    }

    /// The line-aligned addresses of the lines holding `set`.
    pub fn set_lines(&self, set: usize) -> impl Iterator<Item = PhysAddr> {
        let first = self.first_line(set);
        (0..self.geometry.lines_per_set()).map(move |i| PhysAddr(first + i * LINE_BYTES))
    }

    /// Look `va` of address space `asid` up at cycle `now`: read the set of every page size
    /// with valid entries, all lines in parallel, through the cache hierarchy. Returns the
    /// translation if an entry matched, and the cycles the lookup took. Each entry carries its
    /// full tag and at most one matches, so a hit is known when the line holding it arrives; a
    /// miss only when every line has (the tag compare is folded into the access).
    pub fn lookup(
        &mut self,
        va: VirtAddr,
        asid: u16,
        now: u64,
        mem: &mut Hierarchy,
    ) -> (Option<(Pfn, PageSize)>, u64) {
        self.stats.lookups += 1;
        let mut slowest = 0;
        let mut hit = None;
        for size in PageSize::ALL {
            if self.valid[size.index()] == 0 {
                continue;
            }
            let probe = PageProbe::of(va, size, asid);
            let set = self.entries.set_of(&probe);
            // The contents say which line holds the match, if any; the reads below time it.
            let mut hit_line = None;
            if hit.is_none() {
                if let Some(way) = self.entries.peek(&probe).map(|(way, _)| way) {
                    let PageEntry(pfn) = *self.entries.find(&probe).expect("just seen");
                    hit = Some((pfn, size, 0));
                    hit_line = Some(self.entry_addr(set, way as u64).0 & !(LINE_BYTES - 1));
                }
            }
            let first = self.first_line(set);
            for i in 0..self.geometry.lines_per_set() {
                let line = first + i * LINE_BYTES;
                let (lat, level) = mem.access(
                    PhysAddr(line),
                    MemKind::POMTLB,
                    false,
                    now,
                    self.entry_level,
                );
                self.stats.line_reads += 1;
                self.stats.by_level.count(level);
                slowest = slowest.max(lat);
                if hit_line == Some(line) {
                    if let Some((_, _, hit_latency)) = hit.as_mut() {
                        *hit_latency = lat;
                    }
                }
            }
        }
        let (found, latency) = match hit {
            Some((pfn, size, latency)) => {
                self.stats.hits += 1;
                (Some((pfn, size)), latency)
            }
            None => {
                self.stats.misses += 1;
                (None, slowest)
            }
        };
        self.stats.probe_cycles += latency;
        (found, latency)
    }

    /// Take in the translation `(pfn, size)` of `va` a walk found at cycle `now`: the entry
    /// replaces the policy's victim in its set, and the line holding it is written (a store
    /// through the hierarchy whose latency nobody waits for).
    pub fn fill(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pfn: Pfn,
        size: PageSize,
        now: u64,
        mem: &mut Hierarchy,
    ) {
        let probe = PageProbe::of(va, size, asid);
        if self.entries.peek(&probe).is_some() {
            // Already held (e.g. filled by an earlier walk of the same page): refresh it.
            self.entries.insert(&probe, PageEntry(pfn));
        } else {
            self.stats.fills += 1;
            self.valid[size.index()] += 1;
            if let Some((old, _)) = self.entries.insert_absent(&probe, PageEntry(pfn)) {
                self.stats.evictions += 1;
                self.valid[PageEntry::size_of(old).index()] -= 1;
            }
        }
        if let Some((way, _)) = self.entries.peek(&probe) {
            let at = self.entry_addr(self.entries.set_of(&probe), way as u64);
            mem.access(at, MemKind::POMTLB, true, now, self.entry_level);
            self.stats.line_writes += 1;
        }
    }

    /// Drop the entry of the `size` page at `vpn` (a shootdown). Entries are never splintered,
    /// so a page has at most this one entry.
    pub fn invalidate(&mut self, vpn: Vpn, size: PageSize, asid: u16) {
        if self.entries.invalidate(&PageProbe::at(vpn, size, asid)) {
            self.stats.invalidations += 1;
            self.valid[size.index()] -= 1;
        }
    }

    /// The entry `va` would hit, without touching replacement state or memory (for checks).
    pub fn peek(&self, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        PageSize::ALL.into_iter().find_map(|size| {
            self.entries
                .peek(&PageProbe::of(va, size, asid))
                .map(|(_, &PageEntry(p))| (p, size))
        })
    }

    pub fn valid_entries(&self) -> u64 {
        self.valid.iter().sum()
    }

    pub fn snapshot(&self) -> PomTlbSnapshot {
        PomTlbSnapshot {
            counters: self.stats,
            valid_entries: self.valid_entries(),
        }
    }

    pub fn reset_stats(&mut self) {
        self.stats = PomTlbStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::physmem::BuddyAllocator;
    use crate::rng::Rng;
    use crate::schemes::pom_tlb::PomTlbConfig;
    use std::collections::HashSet;

    fn hierarchy() -> Hierarchy {
        let c = crate::sim::SimConfig::load("baseline-radix", &[]).unwrap();
        Hierarchy::new(&c.cache, &c.dram, c.core.frequency_ghz, 1)
    }

    /// An array of `cfg` in a fresh 64 MiB physical memory, and the allocator it came from.
    fn array(cfg: &PomTlbConfig) -> (PomTlbArray, BuddyAllocator) {
        cfg.validate("schemes.pom_tlb").unwrap();
        let mut buddy = BuddyAllocator::new(16384);
        // Take a frame first so the array does not start at address 0 by accident.
        buddy.alloc(0).unwrap();
        let base = cfg.reserve(&mut buddy).unwrap();
        let a = PomTlbArray::new(cfg.geometry(), cfg.replacement, base.addr(), Level::L2);
        (a, buddy)
    }

    fn va(vpn: u64) -> VirtAddr {
        VirtAddr(vpn << 12)
    }

    #[test]
    fn sets_lie_at_distinct_lines_inside_the_reserved_block() {
        let cfg = PomTlbConfig::default();
        let (a, buddy) = array(&cfg);
        let g = a.geometry();
        assert_eq!((g.sets, g.bytes(), g.lines_per_set()), (8192, 1 << 20, 2));
        let (lo, hi) = (a.base().0, a.base().0 + g.bytes());
        assert_ne!(lo, 0);
        let mut seen = HashSet::new();
        for set in 0..g.sets as usize {
            for line in a.set_lines(set) {
                assert!(line.0 % LINE_BYTES == 0 && (lo..hi).contains(&line.0));
                assert!(seen.insert(line.0), "set {set} shares line {line:?}");
            }
        }
        assert_eq!(seen.len() as u64, g.sets * 2, "the sets cover the block");
        // The block is the array's: the allocator hands none of it out again.
        assert!((lo..hi)
            .step_by(4096)
            .all(|b| !buddy.is_free(PhysAddr(b).pfn())));
    }

    #[test]
    fn small_sets_share_a_line_and_stay_inside_the_block() {
        // 2 ways x 16 bytes: two sets per line.
        let cfg = PomTlbConfig {
            entries: 1024,
            ways: 2,
            ..PomTlbConfig::default()
        };
        let (a, _) = array(&cfg);
        let g = a.geometry();
        assert_eq!((g.set_bytes(), g.lines_per_set()), (32, 1));
        let lines: Vec<u64> = (0..g.sets as usize)
            .map(|s| a.set_lines(s).next().unwrap().0)
            .collect();
        for (s, &l) in lines.iter().enumerate() {
            assert!((a.base().0..a.base().0 + g.bytes()).contains(&l));
            assert_eq!(l, a.base().0 + (s as u64 / 2) * LINE_BYTES);
        }
    }

    #[test]
    fn a_filled_translation_hits_and_skips_nothing_it_should_read() {
        let (mut a, _) = array(&PomTlbConfig::default());
        let mut mem = hierarchy();
        // Empty: no size has an entry, so nothing is read and the lookup costs nothing.
        assert_eq!(a.lookup(va(5), 1, 0, &mut mem), (None, 0));
        a.fill(va(5), 1, Pfn(77), PageSize::Size4K, 10, &mut mem);
        assert_eq!(a.stats.line_writes, 1);
        let (hit, lat) = a.lookup(va(5), 1, 100, &mut mem);
        assert_eq!(hit, Some((Pfn(77), PageSize::Size4K)));
        // Both lines of the set were read: the one the fill wrote is in L2, the other came
        // from DRAM. The hit is known when the line holding the entry arrives.
        assert_eq!((a.stats.by_level.l2, a.stats.by_level.dram), (1, 1));
        assert_eq!(lat, 12);
        // A miss in the same set waits for both lines.
        let (miss, lat) = a.lookup(va(5 + 8192), 1, 1000, &mut mem);
        assert_eq!((miss, lat), (None, 12));
        assert_eq!((a.stats.line_reads, a.stats.by_level.l2), (4, 3));
        // Another address space misses too.
        assert_eq!(a.lookup(va(5), 2, 200, &mut mem).0, None);
        // A 2 MiB entry: from now on both sizes' sets are read, in parallel.
        let huge = VirtAddr(7 << 21);
        a.fill(huge, 1, Pfn(512 * 9), PageSize::Size2M, 400, &mut mem);
        let reads = a.stats.line_reads;
        let (hit, _) = a.lookup(VirtAddr(huge.0 + 0x12345), 1, 500, &mut mem);
        assert_eq!(hit, Some((Pfn(512 * 9), PageSize::Size2M)));
        assert_eq!(a.stats.line_reads - reads, 4);
        assert_eq!(
            (a.stats.lookups, a.stats.hits, a.stats.misses, a.stats.fills),
            (5, 2, 3, 2)
        );
        assert_eq!(a.valid_entries(), 2);
    }

    #[test]
    fn invalidate_drops_exactly_the_page() {
        let (mut a, _) = array(&PomTlbConfig::default());
        let mut mem = hierarchy();
        a.fill(va(40), 3, Pfn(1), PageSize::Size4K, 0, &mut mem);
        a.fill(va(41), 3, Pfn(2), PageSize::Size4K, 0, &mut mem);
        a.fill(
            VirtAddr(1 << 21),
            3,
            Pfn(512),
            PageSize::Size2M,
            0,
            &mut mem,
        );
        a.invalidate(Vpn(40), PageSize::Size4K, 4); // another address space: no effect
        assert!(a.peek(va(40), 3).is_some());
        a.invalidate(Vpn(40), PageSize::Size4K, 3);
        assert_eq!(a.peek(va(40), 3), None);
        assert_eq!(a.peek(va(41), 3), Some((Pfn(2), PageSize::Size4K)));
        a.invalidate(Vpn(512), PageSize::Size2M, 3);
        assert_eq!(a.peek(VirtAddr((1 << 21) + 4096), 3), None);
        assert_eq!((a.valid_entries(), a.stats.invalidations), (1, 2));
        assert_eq!(a.lookup(va(40), 3, 0, &mut mem).0, None);
    }

    /// An independent model of one set-associative array: per set, the resident tags and
    /// their replacement state, written from the policies' definitions.
    struct Model {
        ways: usize,
        policy: Replacement,
        /// LRU: tags, most recent last. SRRIP: `(tag, rrpv)` by way, `None` when empty.
        lru: Vec<Vec<u64>>,
        rrip: Vec<Vec<Option<(u64, u8)>>>,
    }

    impl Model {
        fn new(sets: usize, ways: usize, policy: Replacement) -> Model {
            Model {
                ways,
                policy,
                lru: vec![Vec::new(); sets],
                rrip: vec![vec![None; ways]; sets],
            }
        }

        /// Access `tag` in `set`, filling it on a miss; returns whether it hit.
        fn access(&mut self, set: usize, tag: u64) -> bool {
            match self.policy {
                Replacement::Lru => {
                    let s = &mut self.lru[set];
                    let hit = match s.iter().position(|&t| t == tag) {
                        Some(i) => {
                            s.remove(i);
                            true
                        }
                        None => {
                            if s.len() == self.ways {
                                s.remove(0);
                            }
                            false
                        }
                    };
                    s.push(tag);
                    hit
                }
                Replacement::Srrip => {
                    let s = &mut self.rrip[set];
                    if let Some(e) = s.iter_mut().flatten().find(|e| e.0 == tag) {
                        e.1 = 0; // hit: "near-immediate"
                        return true;
                    }
                    // Victim: the first way that is empty or "distant" (3), ageing all until
                    // one is; the new entry is inserted "long" (2).
                    loop {
                        if let Some(w) = s.iter().position(|e| e.is_none_or(|(_, r)| r >= 3)) {
                            s[w] = Some((tag, 2));
                            return false;
                        }
                        s.iter_mut().flatten().for_each(|e| e.1 += 1);
                    }
                }
            }
        }
    }

    /// Lookups then fills on a miss, as the MMU drives the array, on a random stream over a
    /// footprint a few times the array's: every outcome matches the model's.
    fn check_against_model(policy: Replacement) {
        let cfg = PomTlbConfig {
            entries: 256,
            ways: 8,
            replacement: policy,
            ..PomTlbConfig::default()
        };
        let (mut a, _) = array(&cfg);
        let mut mem = hierarchy();
        let g = a.geometry();
        let mut model = Model::new(g.sets as usize, g.ways as usize, policy);
        let mut rng = Rng::new(42, 0);
        let mut hits = 0;
        for i in 0..50_000u64 {
            // Skewed: half the references go to a hot eighth of the pages.
            let vpn = if rng.below(2) == 0 {
                rng.below(128)
            } else {
                rng.below(1024)
            };
            let asid = 1 + rng.below(2) as u16;
            let set = (vpn & (g.sets - 1)) as usize;
            let want = model.access(set, (vpn << 16) | asid as u64);
            let (got, _) = a.lookup(va(vpn), asid, i, &mut mem);
            if got.is_none() {
                a.fill(va(vpn), asid, Pfn(vpn + 1), PageSize::Size4K, i, &mut mem);
            }
            assert_eq!(got.is_some(), want, "reference {i}: vpn {vpn} asid {asid}");
            assert!(got.is_none_or(|(p, _)| p == Pfn(vpn + 1)));
            hits += want as u64;
        }
        assert_eq!((a.stats.hits, a.stats.misses), (hits, 50_000 - hits));
        assert!(
            hits > 5_000 && hits < 45_000,
            "{hits} hits: not a useful test"
        );
    }

    #[test]
    fn hits_and_misses_match_an_independent_lru_model() {
        check_against_model(Replacement::Lru);
    }

    #[test]
    fn hits_and_misses_match_an_independent_srrip_model() {
        check_against_model(Replacement::Srrip);
    }
}
