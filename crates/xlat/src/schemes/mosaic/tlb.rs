//! The TLB of the Mosaic system (§2.1, §3.1, Table 1a) and its vanilla comparator: one
//! set-associative array of the geometry `[schemes.mosaic.tlb]` gives, LRU by default,
//! looked up beside the (empty) L2 TLB level as the system's only TLB.
//!
//! * [`MosaicTlb`]: an entry is tagged by the mosaic VPN (VPN / arity) and ASID and holds the
//!   mosaic page's table of contents, `arity` CPFNs with a valid bit each. A hit decodes the
//!   page's CPFN to its frame with the iceberg hash. An entry whose page's CPFN is invalid
//!   does not answer: the lookup is a miss that walks, and the walk refills the whole entry.
//!   A shootdown of one base page clears only that page's valid bit.
//! * [`VanillaTlb`]: the same array holding ordinary one-page entries (a VPN and its frame),
//!   so a pair of runs compares entry contents alone on the same reference stream.

use super::iceberg::IcebergMap;
use crate::addr::{Pfn, VirtAddr, Vpn};
use crate::mmu::config::TlbConfig;
use crate::mmu::tlb::{Key, PageEntry, PageProbe, TlbArray, TlbEntry};
use serde::Serialize;

/// Most CPFNs an entry holds (§4.1 sweeps arities 4 to 64).
pub const MAX_ARITY: usize = 64;

/// A mosaic TLB entry: the CPFNs of a mosaic page's base pages and their valid bits.
#[derive(Clone, Copy, Debug)]
pub struct TocEntry {
    cpfns: [u8; MAX_ARITY],
    valid: u64,
}

impl Default for TocEntry {
    fn default() -> Self {
        TocEntry {
            cpfns: [0; MAX_ARITY],
            valid: 0,
        }
    }
}

/// A lookup of mosaic page `mvpn` of `asid`.
#[derive(Clone, Copy, Debug)]
pub struct MosaicProbe {
    pub mvpn: u64,
    pub asid: u16,
}

impl TlbEntry for TocEntry {
    type Probe = MosaicProbe;
    /// The tag finds the entry; whether it has the page is its valid bit, which the TLB reads
    /// itself to tell a partial miss from an absent entry.
    const TAG_ANSWERS: bool = true;

    #[inline(always)]
    fn key(p: &MosaicProbe) -> Key {
        Key {
            index: p.mvpn,
            tag: (p.mvpn << 16) | p.asid as u64,
        }
    }
}

/// Counters of either TLB (`mmu.mosaic_tlb`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SideTlbStats {
    pub accesses: u64,
    pub hits: u64,
    /// Every lookup that did not give a translation (each walks), partial ones included.
    pub misses: u64,
    /// Misses on a present entry whose page's CPFN is invalid (0 for vanilla entries).
    pub partial_misses: u64,
    /// Entries written after walks, and valid entries LRU evicted for them.
    pub fills: u64,
    pub evictions: u64,
    /// Pages shot down that the TLB held.
    pub invalidations: u64,
}

impl SideTlbStats {
    fn count(&mut self, hit: bool) {
        self.accesses += 1;
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }
}

fn array<E: TlbEntry>(cfg: &TlbConfig) -> TlbArray<E> {
    TlbArray::new(cfg.sets() as usize, cfg.ways as usize, cfg.replacement)
}

pub struct MosaicTlb {
    entries: TlbArray<TocEntry>,
    arity_shift: u32,
    map: IcebergMap,
    pub latency: u64,
    pub stats: SideTlbStats,
}

impl MosaicTlb {
    /// Host bytes of one entry (config host-memory checks).
    pub const SLOT_BYTES: u64 = TlbArray::<TocEntry>::SLOT_BYTES;

    pub fn new(cfg: &TlbConfig, arity: u32, map: IcebergMap) -> MosaicTlb {
        debug_assert!(arity.is_power_of_two() && arity as usize <= MAX_ARITY);
        MosaicTlb {
            entries: array(cfg),
            arity_shift: arity.ilog2(),
            map,
            latency: u64::from(cfg.latency),
            stats: SideTlbStats::default(),
        }
    }

    pub fn arity(&self) -> usize {
        1 << self.arity_shift
    }

    fn probe(&self, vpn: u64, asid: u16) -> (MosaicProbe, usize) {
        let mvpn = vpn >> self.arity_shift;
        let offset = (vpn & ((1 << self.arity_shift) - 1)) as usize;
        (MosaicProbe { mvpn, asid }, offset)
    }

    /// The frame of `va`'s page, decoded from its entry's CPFN, if the entry holds it.
    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<Pfn> {
        let vpn = va.vpn().0;
        let (probe, offset) = self.probe(vpn, asid);
        let found = self
            .entries
            .find(&probe)
            .map(|e| (e.valid >> offset & 1 == 1, e.cpfns[offset]));
        let pfn = match found {
            Some((true, cpfn)) => self.map.decode(asid, vpn, cpfn),
            Some((false, _)) => {
                self.stats.partial_misses += 1;
                None
            }
            None => None,
        };
        self.stats.count(pfn.is_some());
        pfn
    }

    /// Write the entry of the mosaic page holding `vpn` from its ToC (`cpfns`, the unmapped
    /// code where a page has none), replacing what the TLB held of it.
    pub fn fill(&mut self, vpn: Vpn, asid: u16, cpfns: &[u8]) {
        let (probe, _) = self.probe(vpn.0, asid);
        let unmapped = self.map.geometry.unmapped();
        let mut entry = TocEntry::default();
        for (i, &c) in cpfns.iter().enumerate() {
            entry.cpfns[i] = c;
            entry.valid |= u64::from(c != unmapped) << i;
        }
        self.stats.fills += 1;
        if let Some(e) = self.entries.find(&probe) {
            *e = entry;
        } else if self.entries.insert_absent(&probe, entry).is_some() {
            self.stats.evictions += 1;
        }
    }

    /// Clear the valid bit of page `vpn` of `asid` (§3.1: the rest of the entry stays).
    pub fn invalidate(&mut self, vpn: Vpn, asid: u16) {
        let (probe, offset) = self.probe(vpn.0, asid);
        if let Some(e) = self.entries.find_with(&probe, |_| true) {
            if e.valid >> offset & 1 == 1 {
                e.valid &= !(1 << offset);
                self.stats.invalidations += 1;
            }
        }
    }

    /// The valid bits of the entry for `vpn`'s mosaic page, if the TLB holds one (tests).
    pub fn valid_bits(&self, vpn: Vpn, asid: u16) -> Option<u64> {
        let (probe, _) = self.probe(vpn.0, asid);
        self.entries.peek(&probe).map(|(_, e)| e.valid)
    }
}

pub struct VanillaTlb {
    entries: TlbArray<PageEntry>,
    pub latency: u64,
    pub stats: SideTlbStats,
}

impl VanillaTlb {
    /// Host bytes of one entry (config host-memory checks).
    pub const SLOT_BYTES: u64 = TlbArray::<PageEntry>::SLOT_BYTES;

    pub fn new(cfg: &TlbConfig) -> VanillaTlb {
        VanillaTlb {
            entries: array(cfg),
            latency: u64::from(cfg.latency),
            stats: SideTlbStats::default(),
        }
    }

    fn probe(vpn: Vpn, asid: u16) -> PageProbe {
        PageProbe::at(vpn, crate::addr::PageSize::Size4K, asid)
    }

    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<Pfn> {
        let pfn = self.entries.find(&Self::probe(va.vpn(), asid)).map(|e| e.0);
        self.stats.count(pfn.is_some());
        pfn
    }

    /// Cache the frame of 4 KiB page `vpn` (a piece of a huge page is cached as its 4 KiB
    /// part, as a 4K-only TLB does).
    pub fn fill(&mut self, vpn: Vpn, asid: u16, pfn: Pfn) {
        self.stats.fills += 1;
        let probe = Self::probe(vpn, asid);
        if let Some(e) = self.entries.find(&probe) {
            *e = PageEntry(pfn);
        } else if self.entries.insert_absent(&probe, PageEntry(pfn)).is_some() {
            self.stats.evictions += 1;
        }
    }

    /// Drop the 4 KiB entries of the `pages` pages from `vpn` (a huge page's pieces in one
    /// pass over the array rather than a probe per piece).
    pub fn invalidate(&mut self, vpn: Vpn, pages: u64, asid: u16) {
        let dropped = if pages == 1 {
            usize::from(self.entries.invalidate(&Self::probe(vpn, asid)))
        } else {
            let range = vpn.0..vpn.0 + pages;
            self.entries.invalidate_where(|tag, _| {
                PageEntry::asid_of(tag) == asid && range.contains(&PageEntry::vpn_of(tag))
            })
        };
        self.stats.invalidations += dropped as u64;
    }
}
