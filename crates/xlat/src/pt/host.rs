//! What the hardware reads of a virtual machine's second dimension (gPA → hPA): the VMM's
//! nested page table, in host memory of its own, and its direct segment, if it made one.
//!
//! The nested page table is an x86-64 4-level radix table (EPT/NPT) whose "virtual" addresses
//! are guest-physical ones; its pages live at host-physical frames, in a store of their own
//! (the guest's table pages live in the guest OS's store, at guest-physical frames).

use super::direct::DirectSegment;
use super::radix::RadixPageTable;
use super::store::PtStore;
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr};

/// The VMM's gPA → hPA mapping as the MMU reads it.
pub struct HostTable {
    /// The nested page table; its entries name host frames.
    pub table: RadixPageTable,
    /// The nested table's pages, at host-physical frames.
    pub store: PtStore,
    /// The VMM segment (`BASE_V`, `LIMIT_V`, `OFFSET_V`) and its escape filter, if the VMM
    /// made one.
    pub segment: Option<DirectSegment>,
    /// Shadow paging (§II-A, §IX-D): per guest process (by pid), the VMM's shadow table
    /// mapping guest-virtual straight to host-physical memory, its pages in `store`. Empty
    /// unless the VMM shadows.
    pub shadows: Vec<RadixPageTable>,
}

impl HostTable {
    /// The host page mapping guest-physical `gpa`, from the nested page table (the ground
    /// truth: a VMM segment agrees with it wherever it applies).
    #[inline]
    pub fn lookup(&self, gpa: PhysAddr) -> Option<(Pfn, PageSize)> {
        self.table.lookup(&self.store, VirtAddr(gpa.0))
    }

    /// The host-physical address of `gpa`.
    pub fn translate(&self, gpa: PhysAddr) -> Option<PhysAddr> {
        self.lookup(gpa)
            .map(|(pfn, size)| crate::addr::translate(VirtAddr(gpa.0), pfn, size))
    }
}

/// Compose a guest mapping (the `gsize` page at guest frame `gpfn`, holding `va`) with the host
/// page `(hpfn, hsize)` that holds its guest-physical address: the host page holding `va`'s
/// host-physical address and its size, the smaller of the two (what a TLB entry of a 2D
/// translation maps).
pub fn compose(
    va: VirtAddr,
    (gpfn, gsize): (Pfn, PageSize),
    (hpfn, hsize): (Pfn, PageSize),
) -> (Pfn, PageSize) {
    let gpa = crate::addr::translate(va, gpfn, gsize);
    let hpa = crate::addr::translate(VirtAddr(gpa.0), hpfn, hsize);
    let size = gsize.min(hsize);
    (Pfn(hpa.pfn().0 & !(size.base_pages() - 1)), size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composing_keeps_the_smaller_page_and_the_offset() {
        let va = VirtAddr(0x7f00_0020_3456);
        // A 2 MiB guest page at gPA 0x4000_0000 on 4 KiB host pages: the 4 KiB piece.
        let g = (Pfn(0x4_0000), PageSize::Size2M);
        let gpa = crate::addr::translate(va, g.0, g.1);
        assert_eq!(gpa, PhysAddr(0x4000_3456));
        let h = (Pfn(0x9_9999), PageSize::Size4K);
        assert_eq!(compose(va, g, h), (Pfn(0x9_9999), PageSize::Size4K));
        // A 4 KiB guest page on a 1 GiB host page: the 4 KiB page inside it.
        let g4 = (Pfn(0x4_0003), PageSize::Size4K);
        let h1 = (Pfn(0x8_0000), PageSize::Size1G);
        assert_eq!(compose(va, g4, h1), (Pfn(0x8_0003), PageSize::Size4K));
        // 2 MiB on 2 MiB: the whole page.
        let h2 = (Pfn(0x20_0000), PageSize::Size2M);
        assert_eq!(compose(va, g, h2), (Pfn(0x20_0000), PageSize::Size2M));
    }
}
