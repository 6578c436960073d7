//! A TLB array: set-associative, ASID-tagged, holding one or more page sizes. A hit returns the
//! frame straight from the entry: no page-table store or map is touched.

use super::config::TlbConfig;
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::assoc::SetAssoc;
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TlbStats {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
}

impl TlbStats {
    pub fn add(&mut self, o: &TlbStats) {
        self.accesses += o.accesses;
        self.hits += o.hits;
        self.misses += o.misses;
    }
}

pub struct Tlb {
    array: SetAssoc<Pfn>,
    latency: u64,
    sizes: Vec<PageSize>,
    pub stats: TlbStats,
}

/// Tag = page number at its size, the size, and the ASID; distinct sizes never alias.
#[inline]
fn tag(vpn_at_size: u64, size: PageSize, asid: u16) -> u64 {
    (vpn_at_size << 18) | ((size.index() as u64) << 16) | asid as u64
}

impl Tlb {
    pub fn new(cfg: &TlbConfig) -> Tlb {
        let mut sizes = cfg.page_sizes.clone();
        sizes.sort();
        sizes.dedup();
        Tlb {
            array: SetAssoc::new(cfg.sets() as usize, cfg.ways as usize, cfg.replacement),
            latency: cfg.latency as u64,
            sizes,
            stats: TlbStats::default(),
        }
    }

    pub fn latency(&self) -> u64 {
        self.latency
    }

    pub fn smallest_size(&self) -> PageSize {
        self.sizes[0]
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.sizes.contains(&size)
    }

    /// Probe every page size this array holds (hardware probes them in parallel).
    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        self.stats.accesses += 1;
        for &size in &self.sizes {
            let v = va.0 >> size.shift();
            let set = self.array.set_of(v);
            if let Some(&mut pfn) = self.array.lookup(set, tag(v, size, asid)) {
                self.stats.hits += 1;
                return Some((pfn, size));
            }
        }
        self.stats.misses += 1;
        None
    }

    pub fn insert(&mut self, va: VirtAddr, asid: u16, pfn: Pfn, size: PageSize) {
        let v = va.0 >> size.shift();
        let set = self.array.set_of(v);
        self.array.insert(set, tag(v, size, asid), pfn);
    }

    /// [`Tlb::insert`] of a translation a lookup just missed: no search for it first.
    pub fn insert_absent(&mut self, va: VirtAddr, asid: u16, pfn: Pfn, size: PageSize) {
        let v = va.0 >> size.shift();
        let set = self.array.set_of(v);
        self.array.insert_absent(set, tag(v, size, asid), pfn);
    }

    /// Invalidate the translation of the `size` page at `vpn` (INVLPG).
    pub fn invalidate_page(&mut self, vpn: Vpn, size: PageSize, asid: u16) -> bool {
        let v = vpn.0 >> size.order();
        let set = self.array.set_of(v);
        self.array.invalidate(set, tag(v, size, asid))
    }

    /// Invalidate the 4 KiB pieces of the `size` page at `vpn` that a splintering fill left
    /// here: one pass over the entries, not one probe per 4 KiB page (a 1 GiB page has
    /// 262,144 of them).
    pub fn invalidate_pieces(&mut self, vpn: Vpn, size: PageSize, asid: u16) -> usize {
        if !self.holds(PageSize::Size4K) {
            return 0;
        }
        let huge = vpn.0 >> size.order();
        let small = PageSize::Size4K.index() as u64;
        self.array.invalidate_where(|t, _| {
            (t & 0xffff) as u16 == asid
                && (t >> 16) & 3 == small
                && (t >> 18) >> size.order() == huge
        })
    }

    /// Invalidate every entry of one address space.
    pub fn invalidate_asid(&mut self, asid: u16) -> usize {
        self.array
            .invalidate_where(|t, _| (t & 0xffff) as u16 == asid)
    }

    pub fn flush(&mut self) {
        self.array.clear();
    }
}
