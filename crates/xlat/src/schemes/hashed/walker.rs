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
use crate::error::{Error, Result};
use crate::mem::MemKind;
use crate::mmu::walk::WalkPlan;
use crate::pt::hashed::cwt::{RawEntry, WayMask};
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
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CwcStats {
    pub hits: u64,
    pub misses: u64,
}

/// A fully associative LRU cache of CWT entries (their bytes), keyed by region and address
/// space. The OS flushes the CWCs whenever it changes a CWT (faults, shootdowns), so a cached
/// entry always equals the one in memory.
struct Cwc {
    array: Option<SetAssoc<RawEntry>>,
    stats: CwcStats,
}

impl Cwc {
    fn new(entries: u32) -> Cwc {
        Cwc {
            array: (entries > 0).then(|| SetAssoc::new(1, entries as usize, Replacement::Lru)),
            stats: CwcStats::default(),
        }
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
        let tag = (region << 16) | asid as u64;
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
