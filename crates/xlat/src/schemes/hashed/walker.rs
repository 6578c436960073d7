//! The walker of hashed page tables (ECPT, ME-HPT): Cuckoo Walk Caches, then one step of
//! parallel probes.
//!
//! A walk hashes the VPN and, at the same time, looks up the PUD-CWC (1 GiB regions) and the
//! PMD-CWC (2 MiB regions), which cache Cuckoo Walk Table entries: the page sizes that hold
//! translations in the region and the ways holding their lines (see `pt::hashed::cwt`). A CWC
//! miss reads the CWT entry from memory (one step before the probes). The walker then probes,
//! in one parallel step, the lines of every page size the entries allow, in the ways they name
//! (one line per way, old or new table as each way's rehash pointer decides; ME-HPT §II-B,
//! §V-D, Fig 7). With the default one-line sections that is a single probe per allowed size.
//! ME-HPT's L2P access (shift, L2P read, mask) runs during the CWC access, so it adds latency
//! only where it is longer.

use crate::addr::{PageSize, Pfn, VirtAddr};
use crate::assoc::{Replacement, SetAssoc};
use crate::config::HostUses;
use crate::error::{Error, Result};
use crate::mem::MemKind;
use crate::mmu::walk::WalkPlan;
use crate::pt::hashed::cwt::{ChangeLog, RawEntry, WayMask};
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

    /// The region's CWT entry: from the cache, or read from memory by `memory` only on a miss
    /// (pushing the read into `plan`; an entry never written reads as empty) and filled.
    fn entry(
        &mut self,
        region: u64,
        asid: u16,
        plan: &mut WalkPlan,
        memory: impl FnOnce() -> Option<(crate::addr::PhysAddr, RawEntry)>,
    ) -> RawEntry {
        let tag = Self::tag(region, asid);
        if let Some(array) = &mut self.array {
            if let Some(raw) = array.lookup(0, tag) {
                self.stats.hits += 1;
                return *raw;
            }
        }
        self.stats.misses += 1;
        let raw = match memory() {
            Some((addr, raw)) => {
                plan.push(addr, MemKind::CWT, 0);
                raw
            }
            None => RawEntry::default(),
        };
        if let Some(array) = &mut self.array {
            array.insert(0, tag, raw);
        }
        raw
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
        let raw = self
            .pud_cwc
            .entry(vpn.0 >> 18, asid, plan, || cwt.pud_entry(store, vpn));
        let pud = cwt.pud_view(&raw);
        let pmd = if pud.sizes.contains(PageSize::Size4K) || pud.sizes.contains(PageSize::Size2M) {
            let raw = self
                .pmd_cwc
                .entry(vpn.0 >> 9, asid, plan, || cwt.pmd_entry(store, vpn));
            cwt.pmd_view(&raw, vpn)
        } else {
            Default::default()
        };
        let probe_step = u8::from(!plan.refs().is_empty());
        let mut found = None;
        for size in PageSize::ALL {
            let (present, ways): (bool, WayMask) = match size {
                PageSize::Size4K => (pmd.sizes.contains(size), pmd.ways_4k),
                PageSize::Size2M => (pmd.sizes.contains(size), pmd.ways_2m),
                PageSize::Size1G => (pud.sizes.contains(size), pud.ways_1g),
            };
            if !present {
                continue;
            }
            let n = pt.probe_lines(store, size, vpn, &mut self.lines);
            for line in self.lines[..n].iter().filter(|l| ways & 1 << l.way != 0) {
                plan.push(line.addr, MemKind::HPT, probe_step);
                if found.is_none() {
                    found = line.pfn.map(|p| (p, size));
                }
            }
        }
        found
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
            let mut ctx = PtContext {
                store: &mut self.store,
                buddy: &mut self.buddy,
            };
            self.next_pfn += 1;
            let vpn = VirtAddr(va).vpn();
            self.pt
                .map(&mut ctx, vpn, Pfn(self.next_pfn), PageSize::Size4K)
                .unwrap();
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
}
