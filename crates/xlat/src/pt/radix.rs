//! The x86-64 radix page table (4 or 5 levels) in the hardware entry format.
//!
//! Level numbering follows the walk from the leaf: level 1 is the PT (4 KiB leaves), 2 the PD
//! (2 MiB leaves with PS set), 3 the PDPT (1 GiB leaves), 4 the PML4, 5 the PML5.

use super::{PageTable, PtContext};
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn, BASE_PAGE_SHIFT};
use crate::error::{Error, Result};

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
/// Page-size bit: this entry of a PD or PDPT is a huge-page leaf.
pub const HUGE: u64 = 1 << 7;
/// Physical-address bits 12..51 of an entry.
pub const ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;

/// The level whose entries are leaves for `size`.
pub const fn leaf_level(size: PageSize) -> u32 {
    match size {
        PageSize::Size4K => 1,
        PageSize::Size2M => 2,
        PageSize::Size1G => 3,
    }
}

/// Index of `va` in a table of `level`.
#[inline]
pub fn index(va: VirtAddr, level: u32) -> u64 {
    (va.0 >> (BASE_PAGE_SHIFT + 9 * (level - 1))) & 0x1ff
}

/// Physical address of the entry for `va` in the table at frame `table`.
#[inline]
pub fn entry_addr(table: Pfn, va: VirtAddr, level: u32) -> PhysAddr {
    PhysAddr(table.addr().0 + index(va, level) * 8)
}

/// The page size mapped by a present `entry` of a table at `level`, if it is a leaf.
#[inline]
pub fn leaf_size(entry: u64, level: u32) -> Option<PageSize> {
    match level {
        1 => Some(PageSize::Size4K),
        2 if entry & HUGE != 0 => Some(PageSize::Size2M),
        3 if entry & HUGE != 0 => Some(PageSize::Size1G),
        _ => None,
    }
}

/// The frame an entry points to.
#[inline]
pub fn entry_frame(entry: u64) -> Pfn {
    Pfn((entry & ADDR_MASK) >> BASE_PAGE_SHIFT)
}

pub struct RadixPageTable {
    root: Pfn,
    levels: u32,
    table_frames: u64,
}

impl RadixPageTable {
    pub fn new(ctx: &mut PtContext, levels: u32) -> Result<RadixPageTable> {
        let root = ctx.alloc_table_frame()?;
        Ok(RadixPageTable {
            root,
            levels,
            table_frames: 1,
        })
    }

    pub fn root(&self) -> Pfn {
        self.root
    }
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Functional lookup (no timing): the frame and size mapping `va`, if any.
    pub fn lookup(&self, store: &super::store::PtStore, va: VirtAddr) -> Option<(Pfn, PageSize)> {
        self.leaf(store, va)
            .map(|(at, size)| (entry_frame(store.read(at)), size))
    }

    /// Whether anything of the `size`-aligned range holding `va` is mapped: an entry on the
    /// way down to its level is a huge leaf, or its own entry is present. (Tables emptied by
    /// unmaps count as mapped; callers that never unmap, such as a VMM backing guest memory,
    /// get an exact answer.)
    pub fn covers(&self, store: &super::store::PtStore, va: VirtAddr, size: PageSize) -> bool {
        let mut table = self.root;
        for level in (leaf_level(size)..=self.levels).rev() {
            let e = store.read(entry_addr(table, va, level));
            if e & PRESENT == 0 {
                return false;
            }
            if level == leaf_level(size) || leaf_size(e, level).is_some() {
                return true;
            }
            table = entry_frame(e);
        }
        false
    }

    /// The address of the present leaf entry mapping `va`, and the size of its page.
    pub fn leaf(
        &self,
        store: &super::store::PtStore,
        va: VirtAddr,
    ) -> Option<(PhysAddr, PageSize)> {
        let mut table = self.root;
        for level in (1..=self.levels).rev() {
            let at = entry_addr(table, va, level);
            let e = store.read(at);
            if e & PRESENT == 0 {
                return None;
            }
            if let Some(size) = leaf_size(e, level) {
                return Some((at, size));
            }
            table = entry_frame(e);
        }
        None
    }
}

impl PageTable for RadixPageTable {
    /// The upper levels are few tables, read often, that the host keeps cached: read them to
    /// find the leaf entry, the one a walk of a random page misses in the host's caches.
    #[inline]
    fn prefetch(&self, store: &super::store::PtStore, va: VirtAddr, what: super::store::Prefetch) {
        let mut table = self.root;
        for level in (2..=self.levels).rev() {
            let e = store.read(entry_addr(table, va, level));
            if e & PRESENT == 0 || leaf_size(e, level).is_some() {
                return;
            }
            table = entry_frame(e);
        }
        store.prefetch(entry_addr(table, va, 1), what);
    }

    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        let va = vpn.addr();
        let leaf = leaf_level(size);
        let mut table = self.root;
        for level in ((leaf + 1)..=self.levels).rev() {
            let at = entry_addr(table, va, level);
            let e = ctx.store.read(at);
            table = if e & PRESENT == 0 {
                let next = ctx.alloc_table_frame()?;
                self.table_frames += 1;
                ctx.store
                    .write(at, next.addr().0 | PRESENT | WRITABLE | USER);
                next
            } else if e & HUGE != 0 {
                return Err(Error::Workload(format!(
                    "mapping {size} page at {va:?} overlaps a huge page at level {level}"
                )));
            } else {
                entry_frame(e)
            };
        }
        let huge = if leaf > 1 { HUGE } else { 0 };
        ctx.store.write(
            entry_addr(table, va, leaf),
            pfn.addr().0 | PRESENT | WRITABLE | USER | huge,
        );
        Ok(())
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        let va = vpn.addr();
        let leaf = leaf_level(size);
        let mut table = self.root;
        for level in ((leaf + 1)..=self.levels).rev() {
            let e = ctx.store.read(entry_addr(table, va, level));
            if e & PRESENT == 0 || e & HUGE != 0 {
                return None;
            }
            table = entry_frame(e);
        }
        let at = entry_addr(table, va, leaf);
        let e = ctx.store.read(at);
        if e & PRESENT == 0 {
            return None;
        }
        // Empty table pages are kept, as Linux does until the whole range is unmapped.
        ctx.store.write(at, 0);
        Some(entry_frame(e))
    }

    fn bytes(&self) -> u64 {
        self.table_frames * 4096
    }

    /// Points the page's leaf entry (PTE, or PD/PDPT entry of a huge page) at another frame.
    fn corrupt(&self, store: &mut super::store::PtStore, vpn: Vpn, _size: PageSize) -> bool {
        let Some((at, size)) = self.leaf(store, vpn.addr()) else {
            return false;
        };
        let e = store.read(at);
        let wrong = super::misdirected(entry_frame(e), size);
        store.write(at, (e & !ADDR_MASK) | wrong.addr().0);
        true
    }

    fn va_bits(&self) -> u32 {
        if self.levels == 5 {
            57
        } else {
            48
        }
    }
}
