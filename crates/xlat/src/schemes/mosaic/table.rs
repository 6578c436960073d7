//! The Mosaic page table (§3.1, Fig 5): the radix tree of x86-64 with leaves that hold
//! tables of contents. A leaf PTE keeps its present, permission, accessed and dirty bits per
//! base page, as the paper's prototype does, but names the page's frame by its CPFN instead
//! of a PFN; the ToC of a mosaic page is the `arity` consecutive PTEs of its base pages, which
//! share a leaf table page (a mosaic page is aligned and at most 64 pages). One walk reads
//! the ToC and fills a whole TLB entry; the walker decodes CPFNs with the iceberg hash.

use super::iceberg::{IcebergMap, Slot};
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::pt::radix::{entry_frame, RadixPageTable, ADDR_MASK, PRESENT};
use crate::pt::store::{Prefetch, PtStore};
use crate::pt::{PageTable, PtContext};

pub struct MosaicTable {
    /// The tree, its leaf PTEs holding CPFNs in their frame field.
    pub radix: RadixPageTable,
    map: IcebergMap,
    /// The process's ASID, half of every hash key.
    asid: u16,
}

impl MosaicTable {
    pub fn new(
        ctx: &mut PtContext,
        levels: u32,
        map: IcebergMap,
        asid: u16,
    ) -> Result<MosaicTable> {
        Ok(MosaicTable {
            radix: RadixPageTable::new(ctx, levels)?,
            map,
            asid,
        })
    }

    pub fn iceberg(&self) -> &IcebergMap {
        &self.map
    }

    /// The ToC of the `cpfns.len()`-page mosaic page holding `va`, read from its leaf PTEs
    /// (the unmapped code for a page without one), and the address of its first PTE; `None`
    /// if `va` itself is unmapped.
    pub fn toc(&self, store: &PtStore, va: VirtAddr, cpfns: &mut [u8]) -> Option<PhysAddr> {
        let (at, _) = self.radix.leaf(store, va)?;
        let arity = cpfns.len() as u64;
        let first = PhysAddr(at.0 - 8 * (va.vpn().0 % arity));
        let unmapped = self.map.geometry.unmapped();
        for (i, cpfn) in cpfns.iter_mut().enumerate() {
            let e = store.read(PhysAddr(first.0 + 8 * i as u64));
            *cpfn = if e & PRESENT == 0 {
                unmapped
            } else {
                entry_frame(e).0 as u8
            };
        }
        Some(first)
    }

    /// The frame a leaf's CPFN names for `vpn`.
    pub fn decode(&self, vpn: Vpn, cpfn: u64) -> Option<Pfn> {
        u8::try_from(cpfn)
            .ok()
            .and_then(|c| self.map.decode(self.asid, vpn.0, c))
    }
}

impl PageTable for MosaicTable {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        if size != PageSize::Size4K {
            return Err(Error::Workload(format!(
                "mosaic maps 4 KiB pages only, asked for a {size} page at {:?}",
                vpn.addr()
            )));
        }
        let cpfn = self.map.encode(self.asid, vpn.0, pfn).ok_or_else(|| {
            Error::Workload(format!(
                "frame {pfn:?} is not one of the {} frames page {:?} of pid {} may take",
                self.map.geometry.associativity(),
                vpn.addr(),
                self.asid
            ))
        })?;
        self.radix.map(ctx, vpn, Pfn(u64::from(cpfn)), size)
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        let cpfn = self.radix.unmap(ctx, vpn, size)?;
        self.decode(vpn, cpfn.0)
    }

    fn bytes(&self) -> u64 {
        self.radix.bytes()
    }

    fn read_mapping(&self, store: &PtStore, va: VirtAddr) -> Option<Option<(Pfn, PageSize)>> {
        Some(
            self.radix
                .lookup(store, va)
                .and_then(|(cpfn, size)| Some((self.decode(va.vpn(), cpfn.0)?, size))),
        )
    }

    fn prefetch(&self, store: &PtStore, va: VirtAddr, what: Prefetch) {
        self.radix.prefetch(store, va, what);
    }

    fn va_bits(&self) -> u32 {
        self.radix.va_bits()
    }

    /// Points the page's CPFN at the slot two further on in the same yard (wrapping), so a
    /// front-yard page below slot f - 2 translates to the frame two pages on, as a radix
    /// leaf's corruption does.
    fn corrupt(&self, store: &mut PtStore, vpn: Vpn, _size: PageSize) -> bool {
        let Some((at, _)) = self.radix.leaf(store, vpn.addr()) else {
            return false;
        };
        let e = store.read(at);
        let g = self.map.geometry;
        let Some(slot) = g.decode(entry_frame(e).0 as u8) else {
            return false;
        };
        // Two slots on in a yard of more than two, the other one in a yard of two.
        let other = |s: u32, n: u32| (n > 1).then(|| (s + n.min(3) - 1) % n);
        let wrong = match slot {
            Slot::Front(s) => other(s, g.front).map(Slot::Front),
            Slot::Back { choice, slot } => {
                other(slot, g.back).map(|slot| Slot::Back { choice, slot })
            }
        };
        let Some(wrong) = wrong else {
            return false; // a one-frame yard has no other slot
        };
        let cpfn = u64::from(g.encode(wrong));
        store.write(at, (e & !ADDR_MASK) | (cpfn << 12));
        true
    }
}
