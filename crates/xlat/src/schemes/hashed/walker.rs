//! The walker of hashed page tables (ECPT, ME-HPT): Cuckoo Walk Caches, then one step of
//! parallel probes whose correct one sets the latency.
//!
//! A walk hashes the VPN and, at the same time, looks up the PUD-CWC (1 GiB regions) and the
//! PMD-CWC (2 MiB regions), which cache Cuckoo Walk Table entries: the page sizes that hold
//! translations in the region and the ways holding their lines (see `pt::hashed::cwt`). The
//! walker then probes, in one parallel step, the candidate lines (one per way, old or new
//! table as each way's rehash pointer decides; ME-HPT §II-B, §V-D, Fig 7):
//!
//! * where a cached entry speaks for a page size, the ways it names, or none if it rules the
//!   size out (with the default one-line sections, a single probe per allowed size);
//! * where the CWCs missed, every way of every page size the process has a table for and the
//!   other CWC does not rule out: without CWC information ECPT looks up all d ways of each
//!   size in parallel (Utopia §7: ECH "issues n parallel requests ... the correct one
//!   determines the latency of the walk"). The walker does not wait for the CWT: the missing
//!   entry is read from memory beside the probes, off the critical path, and fills the CWC for
//!   later walks.
//!
//! The step ends when the probe holding the translation returns
//! ([`WalkPlan::answered_by`]); the other probes and the CWT reads still go through the caches
//! and DRAM. A walk that finds nothing waits for every probe. ME-HPT's L2P access (shift, L2P
//! read, mask) runs during the CWC access, so it adds latency only where it is longer.

use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr};
use crate::assoc::{Replacement, SetAssoc};
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::MemKind;
use crate::mmu::walk::WalkPlan;
use crate::pt::hashed::cwt::{ChangeLog, PmdView, PudView, RawEntry, WayMask};
use crate::pt::hashed::{HashedPageTable, HptKind, ProbeLine};
use crate::pt::store::PtStore;
use serde::{Deserialize, Serialize};

/// `[schemes.hashed.walker]`: timing and CWC geometry of the hashed-page-table walker (ME-HPT
/// Table III).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HptWalkerConfig {
    /// Cycles to hash the VPN (CRC: 2, Table III).
    pub hash_latency: u32,
    /// Cycles of the L2P step: shift, L2P read, mask (4, Table III; ME-HPT only).
    pub l2p_latency: u32,
    /// PMD-CWC entries (16, Table III) and PUD-CWC entries (2); 0 disables a CWC.
    pub pmd_cwc_entries: u32,
    pub pud_cwc_entries: u32,
    /// CWC round trip (4 cycles, Table III).
    pub cwc_latency: u32,
}

impl Default for HptWalkerConfig {
    fn default() -> Self {
        HptWalkerConfig {
            hash_latency: 2,
            l2p_latency: 4,
            pmd_cwc_entries: 16,
            pud_cwc_entries: 2,
            cwc_latency: 4,
        }
    }
}

impl HptWalkerConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.hash_latency == 0 {
            return Err(Error::config(
                format!("{path}.hash_latency"),
                "must be at least 1 cycle (hashing is never free)",
            ));
        }
        for (key, entries) in [
            ("pmd_cwc_entries", self.pmd_cwc_entries),
            ("pud_cwc_entries", self.pud_cwc_entries),
        ] {
            // Fully associative: a lookup searches every entry. 0 is no CWC.
            if entries > 0 {
                crate::config::ways(format!("{path}.{key}"), entries.into())?;
            }
        }
        Ok(())
    }

    /// The two CWCs of each core.
    pub fn host_uses(&self, path: &str, uses: &mut HostUses) {
        for (key, entries) in [
            ("pmd_cwc_entries", self.pmd_cwc_entries),
            ("pud_cwc_entries", self.pud_cwc_entries),
        ] {
            uses.per_core(
                format!("{path}.{key}"),
                entries.into(),
                "entries",
                Cwc::SLOT_BYTES,
            );
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CwcStats {
    pub hits: u64,
    pub misses: u64,
    /// Entries dropped because the OS changed the CWT entry they cache.
    pub invalidations: u64,
    /// Times the change log had moved on too far, so every entry of the address space went.
    pub asid_flushes: u64,
}

/// A fully associative LRU cache of CWT entries (their bytes), keyed by region and address
/// space. When the OS changes a CWT entry it invalidates that entry in every CWC (the table's
/// change log, applied before each walk), and shootdowns flush them, so a cached entry always
/// equals the one in memory.
struct Cwc {
    array: Option<SetAssoc<RawEntry>>,
    stats: CwcStats,
    /// Per address space: the number of the last change of its CWT this cache applied.
    seen: Vec<u64>,
}

impl Cwc {
    const SLOT_BYTES: u64 = SetAssoc::<RawEntry>::SLOT_BYTES;

    fn new(entries: u32) -> Cwc {
        Cwc {
            array: (entries > 0).then(|| SetAssoc::new(1, entries as usize, Replacement::Lru)),
            stats: CwcStats::default(),
            seen: Vec::new(),
        }
    }

    fn tag(region: u64, asid: u16) -> u64 {
        (region << 16) | asid as u64
    }

    /// Drop the cached entries of `asid` whose CWT entry changed since this cache last looked
    /// at `log`, and only those.
    fn apply(&mut self, asid: u16, log: &ChangeLog) {
        let a = asid as usize;
        if self.seen.len() <= a {
            self.seen.resize(a + 1, 0);
        }
        if self.seen[a] == log.seq() {
            return;
        }
        if let Some(array) = &mut self.array {
            match log.since(self.seen[a]) {
                Some(regions) => {
                    for region in regions {
                        self.stats.invalidations +=
                            array.invalidate(0, Self::tag(region, asid)) as u64;
                    }
                }
                None => {
                    self.stats.asid_flushes += 1;
                    self.stats.invalidations +=
                        array.invalidate_where(|t, _| t & 0xffff == asid as u64) as u64;
                }
            }
        }
        self.seen[a] = log.seq();
    }

    /// The region's CWT entry if the cache holds it. On a miss the walk goes on without it:
    /// the entry is read from memory by `memory` (an entry never written reads as empty) and
    /// filled for later walks, and its address, if it has one, is left in `fetch` for the
    /// walk to issue off its critical path.
    fn lookup(
        &mut self,
        region: u64,
        asid: u16,
        fetch: &mut Option<PhysAddr>,
        memory: impl FnOnce() -> Option<(PhysAddr, RawEntry)>,
    ) -> Option<RawEntry> {
        let tag = Self::tag(region, asid);
        if let Some(array) = &mut self.array {
            if let Some(raw) = array.lookup(0, tag) {
                self.stats.hits += 1;
                return Some(*raw);
            }
        }
        self.stats.misses += 1;
        let raw = match memory() {
            Some((addr, raw)) => {
                *fetch = Some(addr);
                raw
            }
            None => RawEntry::default(),
        };
        if let Some(array) = &mut self.array {
            array.insert(0, tag, raw);
        }
        None
    }
}

pub struct HashedWalker {
    cfg: HptWalkerConfig,
    kind: HptKind,
    pmd_cwc: Cwc,
    pud_cwc: Cwc,
    lines: Vec<ProbeLine>,
}

/// The `mmu.cwc` stats subtree.
#[derive(Clone, Debug, Serialize)]
pub struct CwcSnapshot {
    pub pmd: CwcStats,
    pub pud: CwcStats,
}

impl HashedWalker {
    pub fn new(cfg: &HptWalkerConfig, kind: HptKind, ways: usize) -> HashedWalker {
        HashedWalker {
            cfg: cfg.clone(),
            kind,
            pmd_cwc: Cwc::new(cfg.pmd_cwc_entries),
            pud_cwc: Cwc::new(cfg.pud_cwc_entries),
            lines: vec![ProbeLine::default(); ways],
        }
    }

    /// Plan the walk for `va` and find its translation from the table's bytes.
    pub fn plan(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pt: &HashedPageTable,
        store: &PtStore,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        plan.clear();
        let l2p_extra = match self.kind {
            HptKind::Mehpt => self.cfg.l2p_latency.saturating_sub(self.cfg.cwc_latency),
            HptKind::Ecpt => 0,
        };
        plan.fixed_cycles = (self.cfg.hash_latency + self.cfg.cwc_latency + l2p_extra) as u64;
        let vpn = va.vpn();
        let cwt = pt.cwt();
        self.pud_cwc.apply(asid, cwt.pud_changes());
        self.pmd_cwc.apply(asid, cwt.pmd_changes());
        // Both CWCs are looked up during the hash. A miss leaves the walk without that entry;
        // the entry is fetched from the CWT beside the probes, off the critical path.
        let mut fetch = [None; 2];
        let pud = self
            .pud_cwc
            .lookup(vpn.0 >> 18, asid, &mut fetch[0], || {
                cwt.pud_entry(store, vpn)
            })
            .map(|raw| cwt.pud_view(&raw));
        // A PUD entry saying the 1 GiB region has no 4 KiB or 2 MiB page leaves nothing for
        // the PMD-CWT to say.
        let small =
            |p: &PudView| p.sizes.contains(PageSize::Size4K) || p.sizes.contains(PageSize::Size2M);
        let pmd = if pud.as_ref().is_none_or(small) {
            self.pmd_cwc
                .lookup(vpn.0 >> 9, asid, &mut fetch[1], || {
                    cwt.pmd_entry(store, vpn)
                })
                .map(|raw| cwt.pmd_view(&raw, vpn))
        } else {
            None
        };
        let mut found = None;
        for size in PageSize::ALL {
            let ways = candidate_ways(size, pud.as_ref(), pmd.as_ref());
            if ways == 0 {
                continue;
            }
            let n = pt.probe_lines(store, size, vpn, &mut self.lines);
            for line in self.lines[..n].iter().filter(|l| ways & 1 << l.way != 0) {
                if found.is_none() {
                    if let Some(pfn) = line.pfn {
                        found = Some((pfn, size, plan.refs().len()));
                    }
                }
                plan.push(line.addr, MemKind::HPT, 0);
            }
        }
        for addr in fetch.into_iter().flatten() {
            plan.push_background(addr, MemKind::CWT, 0);
        }
        found.map(|(pfn, size, probe)| {
            plan.answered_by(probe);
            (pfn, size)
        })
    }

    pub fn flush(&mut self) {
        for cwc in [&mut self.pmd_cwc, &mut self.pud_cwc] {
            if let Some(a) = &mut cwc.array {
                a.clear();
            }
        }
    }

    pub fn reset_stats(&mut self) {
        self.pmd_cwc.stats = CwcStats::default();
        self.pud_cwc.stats = CwcStats::default();
    }

    pub fn snapshot(&self) -> CwcSnapshot {
        CwcSnapshot {
            pmd: self.pmd_cwc.stats,
            pud: self.pud_cwc.stats,
        }
    }
}

/// The ways of the `size` table a walk probes, given what the CWCs held: the ways an entry
/// names; none where an entry rules the size out; every way where no entry speaks for the size
/// (a CWC miss), as ECPT's walks do without CWC information. A PMD entry with a 4 KiB or 2 MiB
/// page in its region rules out a 1 GiB page there.
fn candidate_ways(size: PageSize, pud: Option<&PudView>, pmd: Option<&PmdView>) -> WayMask {
    const ALL: WayMask = WayMask::MAX;
    match size {
        PageSize::Size1G => match (pud, pmd) {
            (Some(p), _) if p.sizes.contains(size) => p.ways_1g,
            (Some(_), _) => 0,
            (None, Some(m)) if !m.sizes.is_empty() => 0,
            (None, _) => ALL,
        },
        _ => match (pmd, pud) {
            (Some(m), _) if m.sizes.contains(size) => match size {
                PageSize::Size4K => m.ways_4k,
                _ => m.ways_2m,
            },
            (Some(_), _) => 0,
            (None, Some(p)) if !p.sizes.contains(size) => 0,
            (None, _) => ALL,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::physmem::BuddyAllocator;
    use crate::pt::hashed::HashedConfig;
    use crate::pt::{PageTable, PtContext};

    struct Rig {
        buddy: BuddyAllocator,
        store: PtStore,
        pt: HashedPageTable,
        walker: HashedWalker,
        plan: WalkPlan,
        next_pfn: u64,
    }

    impl Rig {
        fn new(kind: HptKind) -> Rig {
            let cfg = HashedConfig::default();
            Rig {
                buddy: BuddyAllocator::new((1 << 30) / 4096),
                store: PtStore::new(),
                pt: HashedPageTable::new(&cfg, kind, 5).unwrap(),
                walker: HashedWalker::new(&HptWalkerConfig::default(), kind, cfg.ways),
                plan: WalkPlan::default(),
                next_pfn: 1 << 24,
            }
        }

        fn map(&mut self, va: u64) {
            self.map_size(va, PageSize::Size4K);
        }

        fn map_size(&mut self, va: u64, size: PageSize) {
            let mut ctx = PtContext {
                store: &mut self.store,
                buddy: &mut self.buddy,
            };
            self.next_pfn += 1 << size.order();
            let vpn = VirtAddr(va).vpn();
            self.pt
                .map(&mut ctx, vpn, Pfn(self.next_pfn), size)
                .unwrap();
        }

        /// The translation the table's bytes give (what every walk must find).
        fn truth(&self, va: u64) -> Option<(Pfn, PageSize)> {
            self.pt.translate(&self.store, VirtAddr(va).vpn())
        }

        /// The probes (`hpt`) and CWT reads of the last plan, as (kind, step, waited).
        fn refs(&self, kind: MemKind) -> Vec<(u8, bool)> {
            self.plan
                .refs()
                .iter()
                .filter(|r| r.kind == kind)
                .map(|r| (r.step, r.waited))
                .collect()
        }

        fn walk(&mut self, va: u64) -> Option<(Pfn, PageSize)> {
            self.walker
                .plan(VirtAddr(va), 1, &self.pt, &self.store, &mut self.plan)
        }
    }

    /// A page fault in one 2 MiB region invalidates that region's PMD-CWC entry only: the
    /// entry of another region survives and still hits, and the changed region's entry is read
    /// again (so it cannot hide the new mapping).
    #[test]
    fn a_fault_invalidates_only_the_changed_regions_cwc_entry() {
        for kind in [HptKind::Ecpt, HptKind::Mehpt] {
            let mut r = Rig::new(kind);
            let (a, b) = (0x4000_0000u64, 0x4060_0000u64); // two 2 MiB regions of one 1 GiB
            r.map(a);
            r.map(b);
            assert!(r.walk(a).is_some() && r.walk(b).is_some());
            let base = r.walker.snapshot().pmd;
            assert_eq!((base.hits, base.misses), (0, 2), "{kind:?}");
            // A new page in a's existing line (same cluster of 8 pages): no CWT entry changes,
            // so nothing is invalidated and a's cached entry finds it.
            r.map(a + 0x1000);
            assert!(r.walk(a + 0x1000).is_some(), "{kind:?}");
            let s = r.walker.snapshot().pmd;
            assert_eq!((s.hits, s.invalidations), (1, 0), "{kind:?}");
            // A new line in region a: only a's entry changes.
            r.map(a + 0x10000);
            assert!(r.walk(b).is_some(), "{kind:?}");
            let s = r.walker.snapshot().pmd;
            assert_eq!(s.hits, 2, "{kind:?}: b's entry survived the change in a");
            assert_eq!(s.invalidations, 1, "{kind:?}");
            assert!(
                r.walk(a + 0x10000).is_some(),
                "{kind:?}: the new page is found"
            );
            let s = r.walker.snapshot().pmd;
            assert_eq!(s.misses, 3, "{kind:?}: a's entry was read again");
            // The PUD-CWC entry (sizes of the 1 GiB region) did not change: it hit throughout.
            let pud = r.walker.snapshot().pud;
            assert_eq!((pud.misses, pud.invalidations), (1, 0), "{kind:?}");
        }
    }

    /// A walker that fell behind the change log by more than it keeps drops every entry of
    /// the address space, and still finds every mapping.
    #[test]
    fn a_long_burst_of_changes_flushes_the_address_space() {
        let mut r = Rig::new(HptKind::Mehpt);
        r.map(0x4000_0000);
        assert!(r.walk(0x4000_0000).is_some());
        let pages = ChangeLog::CAPACITY as u64 + 10;
        for k in 0..pages {
            r.map(0x8000_0000 + k * 0x20_0000); // one page in each of many regions
        }
        assert!(r.walk(0x4000_0000).is_some());
        let s = r.walker.snapshot().pmd;
        assert_eq!(s.asid_flushes, 1);
        assert_eq!(
            s.misses, 2,
            "the surviving region's entry went with the flush"
        );
        for k in (0..pages).step_by(97) {
            assert!(r.walk(0x8000_0000 + k * 0x20_0000).is_some());
        }
    }

    /// With both CWCs cold, a walk probes every way of every page size the process has a
    /// table for, all in step 0, and reads the two CWT entries in the same step without
    /// waiting for them; only the probe that holds the translation is waited for. Once the
    /// CWCs hold the entries, the walk probes the one way they name, and reads no CWT.
    #[test]
    fn a_cwc_miss_probes_every_candidate_way_in_one_step_and_a_hit_only_the_named_one() {
        for kind in [HptKind::Ecpt, HptKind::Mehpt] {
            let mut r = Rig::new(kind);
            let ways = HashedConfig::default().ways;
            let va = 0x4000_0000u64 + 0x5000;
            r.map(va);
            // A 2 MiB page elsewhere gives the process a 2M table too.
            r.map_size(0x8000_0000, PageSize::Size2M);
            let cold = r.walk(va);
            assert_eq!(cold, r.truth(va), "{kind:?}");
            assert_eq!(cold.map(|f| f.1), Some(PageSize::Size4K));
            let probes = r.refs(MemKind::HPT);
            assert_eq!(
                probes.len(),
                2 * ways,
                "{kind:?}: all ways of the 4K and 2M tables"
            );
            assert!(
                probes.iter().all(|&(step, _)| step == 0),
                "{kind:?}: {probes:?}"
            );
            assert_eq!(
                probes.iter().filter(|p| p.1).count(),
                1,
                "{kind:?}: only the correct probe is waited for"
            );
            assert_eq!(
                r.refs(MemKind::CWT),
                vec![(0, false), (0, false)],
                "{kind:?}: PUD and PMD CWT reads, off the critical path"
            );
            assert_eq!(r.plan.refs().len(), 2 * ways + 2);
            // The correct probe is the line that holds the page.
            let waited = r.plan.refs().iter().find(|w| w.waited).unwrap().addr;
            let mut lines = vec![ProbeLine::default(); ways];
            let n =
                r.pt.probe_lines(&r.store, PageSize::Size4K, VirtAddr(va).vpn(), &mut lines);
            let holder = lines[..n].iter().find(|l| l.pfn.is_some()).unwrap();
            assert_eq!(waited, holder.addr, "{kind:?}");
            // Again: both CWCs hit and name the holding way: one probe, no CWT read.
            let warm = r.walk(va);
            assert_eq!(warm, cold, "{kind:?}");
            assert_eq!(r.refs(MemKind::HPT), vec![(0, true)], "{kind:?}");
            assert!(r.refs(MemKind::CWT).is_empty(), "{kind:?}");
            assert_eq!(r.plan.refs()[0].addr, holder.addr, "{kind:?}");
            // The 2 MiB page: its region's PMD-CWC entry is cold, the PUD-CWC's too (another
            // 1 GiB region); the walk finds it among the probes of both tables.
            let huge = 0x8000_0000u64 + 0x1234;
            assert_eq!(r.walk(huge), r.truth(huge), "{kind:?}");
            assert_eq!(r.walk(huge).map(|f| f.1), Some(PageSize::Size2M));
            assert_eq!(r.refs(MemKind::HPT), vec![(0, true)], "{kind:?}: CWCs warm");
        }
    }

    /// A walk with a cold PMD-CWC but a warm PUD-CWC probes only the sizes the PUD entry
    /// allows (here the 4K table alone): the ways of the 2M table, which the process has but
    /// the 1 GiB region does not use, are left out.
    #[test]
    fn a_pud_entry_limits_the_sizes_a_pmd_cwc_miss_probes() {
        let mut r = Rig::new(HptKind::Ecpt);
        let ways = HashedConfig::default().ways;
        let (a, b) = (0x4000_0000u64, 0x4060_0000u64); // two 2 MiB regions of one 1 GiB
        r.map(a);
        r.map(b);
        r.map_size(0x8000_0000, PageSize::Size2M);
        r.walk(a);
        assert_eq!(r.walk(b), r.truth(b));
        assert_eq!(r.refs(MemKind::HPT).len(), ways, "the 4K table's ways only");
        assert_eq!(r.refs(MemKind::CWT), vec![(0, false)], "the PMD-CWT entry");
    }

    /// Every mapped page is found, whatever the CWCs hold, and it is the table's translation.
    #[test]
    fn walks_find_the_tables_translation_with_cold_and_warm_cwcs() {
        for kind in [HptKind::Ecpt, HptKind::Mehpt] {
            let mut r = Rig::new(kind);
            let pages: Vec<u64> = (0..600u64)
                .map(|k| 0x4000_0000 + k * 0x3000 + (k % 7) * 0x40_0000)
                .collect();
            for &va in &pages {
                r.map(va);
            }
            for pass in 0..2 {
                for &va in &pages {
                    assert_eq!(r.walk(va), r.truth(va), "{kind:?} pass {pass} {va:#x}");
                    assert!(r.walk(va).is_some());
                }
                r.walker.flush();
            }
            assert_eq!(r.walk(0x7000_0000), None, "{kind:?}: unmapped");
        }
    }

    /// The latency of a walk whose CWCs missed is set by the probe that holds the
    /// translation: with its line in the L1D and the other ways' lines in DRAM, the walk takes
    /// the fixed cycles plus one L1D hit, while the other probes still go to DRAM.
    #[test]
    fn the_correct_probe_sets_the_latency_of_a_cwc_missing_walk() {
        use crate::mem::{Hierarchy, Level};
        use crate::mmu::walk::WalkRefStats;
        let cfg = crate::SimConfig::load("utopia-ech", &[]).unwrap();
        let mut mem = Hierarchy::new(&cfg.cache, &cfg.dram, cfg.core.frequency_ghz, 1);
        let mut r = Rig::new(HptKind::Ecpt);
        let va = 0x4000_0000u64;
        r.map(va);
        r.walk(va);
        let holder = r.plan.refs().iter().find(|w| w.waited).unwrap().addr;
        mem.access(holder, MemKind::HPT, false, 0, Level::L1d);
        r.walker.flush();
        assert!(r.walk(va).is_some());
        let mut stats = WalkRefStats::default();
        let lat = r.plan.execute(&mut mem, 10_000, Level::L1d, &mut stats);
        let (hit, level) = mem.access(holder, MemKind::HPT, false, 20_000, Level::L1d);
        assert_eq!(level, Level::L1d);
        assert_eq!(lat, r.plan.fixed_cycles + hit);
        let ways = HashedConfig::default().ways as u64;
        assert_eq!(stats.by_level[Level::L1d as usize], 1);
        assert_eq!(
            stats.by_level[Level::Dram as usize],
            ways - 1 + 2,
            "the other probes and both CWT reads went to DRAM"
        );
    }
}
