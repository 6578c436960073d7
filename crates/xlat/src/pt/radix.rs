//! The x86-64 radix page table (4 or 5 levels) in the hardware entry format.
//!
//! Level numbering follows the walk from the leaf: level 1 is the PT (4 KiB leaves), 2 the PD
//! (2 MiB leaves with PS set), 3 the PDPT (1 GiB leaves), 4 the PML4, 5 the PML5.

use super::{PageTable, PtContext};
use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr, Vpn, BASE_PAGE_SHIFT};
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

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

/// Where a table's entries are in physical memory (`schemes.radix.placement`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// x86-64: 512 entries per 4 KiB table page, the entries of neighbouring pages side by
    /// side (eight to a 64-byte line).
    #[default]
    X86,
    /// ChampSim's virtual memory (`src/vmem.cc`, `get_pte_pa`, with its default 4 KiB
    /// `pte_page_size`): each entry gets a frame of its own. The entry of level `L` for `va`
    /// lies at `frame(L, va >> (12 + 9 (L - 1))) + 8 * index(va, L)`, one frame per level and
    /// VA prefix *including* the entry's own index bits, so no two entries share a frame or a
    /// line. The root's entry is read in the root frame at the index of the level below
    /// (`src/ptw.cc` starts every walk at `CR3 + 8 * index(va, levels - 1)`).
    Champsim,
}

impl Placement {
    pub fn is_x86(&self) -> bool {
        *self == Placement::X86
    }
}

/// The frames of ChampSim's placement: one per (level, VA prefix), taken when the OS writes
/// an entry there (the table's contents stay in its x86 frames, read by the walk; these
/// frames are where the walk's references go).
struct ChampsimFrames {
    /// `(level, va >> shift(level))` to frame.
    frames: FxHashMap<(u32, u64), Pfn>,
    root: Pfn,
    /// The entries the last `map` gave frames to, with their levels, top level first.
    made: Vec<(PhysAddr, u32)>,
}

#[inline]
fn shift(level: u32) -> u32 {
    BASE_PAGE_SHIFT + 9 * (level - 1)
}

pub struct RadixPageTable {
    root: Pfn,
    levels: u32,
    table_frames: u64,
    /// ChampSim's placement of the entries, if chosen.
    champsim: Option<Box<ChampsimFrames>>,
}

impl RadixPageTable {
    pub fn new(ctx: &mut PtContext, levels: u32) -> Result<RadixPageTable> {
        let root = ctx.alloc_table_frame()?;
        Ok(RadixPageTable {
            root,
            levels,
            table_frames: 1,
            champsim: None,
        })
    }

    /// A new table whose entries are placed as `placement` says.
    pub fn with_placement(
        ctx: &mut PtContext,
        levels: u32,
        placement: Placement,
    ) -> Result<RadixPageTable> {
        let mut t = RadixPageTable::new(ctx, levels)?;
        if placement == Placement::Champsim {
            let root = ctx.alloc_placement_frame()?;
            t.champsim = Some(Box::new(ChampsimFrames {
                frames: FxHashMap::default(),
                root,
                made: Vec::new(),
            }));
        }
        Ok(t)
    }

    /// The physical address a walk references to read the entry of `level` for `va`, which
    /// the table holds at `at` (its address in the x86 layout): `at` itself, or with
    /// ChampSim's placement the entry's own frame. An entry not yet written has no frame
    /// there (ChampSim's walker never reads one, and neither does the radix walker under this
    /// placement); were it read, it would be referenced at `at`.
    #[inline]
    pub fn referenced(&self, at: PhysAddr, va: VirtAddr, level: u32) -> PhysAddr {
        match &self.champsim {
            None => at,
            Some(c) => champsim_entry(c, self.levels, (va, va), level).unwrap_or(at),
        }
    }

    /// Whether the entries are placed as ChampSim places them.
    pub fn is_champsim(&self) -> bool {
        self.champsim.is_some()
    }

    /// With ChampSim's placement, the address ChampSim's walker reads after a hit in the
    /// paging-structure cache that a walk for `filled_by` last filled (`src/ptw.cc`,
    /// `handle_read`): the frame of `filled_by`'s entry of `level`, at `va`'s index. `None`
    /// under x86's placement, or if that frame does not exist.
    pub fn champsim_pscl_read(
        &self,
        filled_by: VirtAddr,
        va: VirtAddr,
        level: u32,
    ) -> Option<PhysAddr> {
        champsim_entry(self.champsim.as_ref()?, self.levels, (filled_by, va), level)
    }

    /// With ChampSim's placement, the frames its entries took (besides the x86 frames that
    /// hold their contents); 0 otherwise.
    pub fn placement_frames(&self) -> u64 {
        self.champsim
            .as_ref()
            .map_or(0, |c| c.frames.len() as u64 + 1)
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

/// In ChampSim's placement, the address in the frame of `frame_of`'s entry of `level` at
/// `index_of`'s index, if that frame exists: the entry for a VA when both are that VA (a
/// PSCL hit's first read when they differ, [`RadixPageTable::champsim_pscl_read`]).
#[inline]
fn champsim_entry(
    c: &ChampsimFrames,
    levels: u32,
    (frame_of, index_of): (VirtAddr, VirtAddr),
    level: u32,
) -> Option<PhysAddr> {
    if level == levels {
        return Some(PhysAddr(c.root.addr().0 + index(index_of, levels - 1) * 8));
    }
    c.frames
        .get(&(level, frame_of.0 >> shift(level)))
        .map(|f| PhysAddr(f.addr().0 + index(index_of, level) * 8))
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
        if let Some(c) = &mut self.champsim {
            // ChampSim's frames of the entries on the way, root excepted (`get_pte_pa` takes
            // one for each (level, prefix) it has not seen).
            c.made.clear();
            for level in (leaf..self.levels).rev() {
                if let std::collections::hash_map::Entry::Vacant(v) =
                    c.frames.entry((level, va.0 >> shift(level)))
                {
                    let frame = v.insert(ctx.alloc_placement_frame()?);
                    let at = PhysAddr(frame.addr().0 + index(va, level) * 8);
                    c.made.push((at, level));
                }
            }
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
        (self.table_frames + self.placement_frames()) * 4096
    }

    /// ChampSim's placement counts its own frames (one per entry), as ChampSim's fault
    /// penalty does; the x86 frames holding the contents are bookkeeping there.
    fn table_pages(&self) -> u64 {
        match &self.champsim {
            None => self.table_frames,
            Some(_) => self.placement_frames(),
        }
    }

    fn read_mapping(
        &self,
        store: &super::store::PtStore,
        va: VirtAddr,
    ) -> Option<Option<(Pfn, PageSize)>> {
        Some(RadixPageTable::lookup(self, store, va))
    }

    fn entries_made(&self) -> &[(PhysAddr, u32)] {
        self.champsim.as_ref().map_or(&[], |c| &c.made)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::physmem::BuddyAllocator;
    use crate::pt::store::PtStore;

    fn table(placement: Placement) -> (PtStore, BuddyAllocator, RadixPageTable) {
        let mut store = PtStore::new();
        let mut buddy = BuddyAllocator::new(1 << 16);
        let t = RadixPageTable::with_placement(
            &mut PtContext {
                store: &mut store,
                buddy: &mut buddy,
            },
            5,
            placement,
        )
        .unwrap();
        (store, buddy, t)
    }

    /// The x86 entry address of `va` at `level` (the table's own layout).
    fn x86_at(t: &RadixPageTable, store: &PtStore, va: VirtAddr, level: u32) -> PhysAddr {
        let mut table = t.root();
        for l in ((level + 1)..=t.levels()).rev() {
            table = entry_frame(store.read(entry_addr(table, va, l)));
        }
        entry_addr(table, va, level)
    }

    #[test]
    fn champsim_placement_gives_vmem_addresses() {
        let (mut store, mut buddy, mut t) = table(Placement::Champsim);
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        // Two neighbouring pages, a page of the next 2 MiB region, one far away.
        let vas = [
            0x7f12_3456_7000u64,
            0x7f12_3456_8000,
            0x7f12_3480_0000,
            0x1000,
        ];
        for (i, &va) in vas.iter().enumerate() {
            t.map(
                &mut ctx,
                VirtAddr(va).vpn(),
                Pfn(0x9000 + i as u64),
                PageSize::Size4K,
            )
            .unwrap();
        }
        let c = t.champsim.as_ref().unwrap();
        let frame = |level: u32, va: u64| c.frames[&(level, va >> (12 + 9 * (level - 1)))];
        for &va in &vas {
            let v = VirtAddr(va);
            // Hand-computed from get_pte_pa: the leaf entry of 0x7f12_3456_7000 has index
            // (va >> 12) & 511 = 0x167, so it is 0xb38 bytes into the frame of VPN
            // 0x7f1234567; its PD entry has index (va >> 21) & 511 = 0x1a2, at 0xd10.
            for level in 1..5 {
                let want = PhysAddr(frame(level, va).addr().0 + index(v, level) * 8);
                assert_eq!(
                    t.referenced(x86_at(&t, ctx.store, v, level), v, level),
                    want
                );
            }
            // The root: CR3's frame at the index of level 4.
            let root = t.referenced(x86_at(&t, ctx.store, v, 5), v, 5);
            assert_eq!(root, PhysAddr(c.root.addr().0 + ((va >> 39) & 511) * 8));
        }
        let v = VirtAddr(vas[0]);
        let leaf = t.referenced(x86_at(&t, ctx.store, v, 1), v, 1);
        assert_eq!(leaf.0 & 0xfff, 0xb38);
        let pd = t.referenced(x86_at(&t, ctx.store, v, 2), v, 2);
        assert_eq!(pd.0 & 0xfff, 0xd10);
        // Neighbouring pages: their leaf entries in two frames, not one line; their PD
        // entry is one (same 2 MiB region), the next region's is in another frame.
        let leaf_b = t.referenced(
            x86_at(&t, ctx.store, VirtAddr(vas[1]), 1),
            VirtAddr(vas[1]),
            1,
        );
        assert_ne!(leaf.pfn(), leaf_b.pfn());
        let pd_b = t.referenced(
            x86_at(&t, ctx.store, VirtAddr(vas[1]), 2),
            VirtAddr(vas[1]),
            2,
        );
        assert_eq!(pd, pd_b);
        let pd_c = t.referenced(
            x86_at(&t, ctx.store, VirtAddr(vas[2]), 2),
            VirtAddr(vas[2]),
            2,
        );
        assert_ne!(pd.pfn(), pd_c.pfn());
        // No frame holds two keys' entries: one frame per (level, prefix), all distinct.
        let mut all: Vec<Pfn> = c.frames.values().copied().chain([c.root]).collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        // Keys: 4 leaf (one per page), 3 PD (regions 0x7f1234400000 (twice), 0x7f1234800000,
        // 0), 2 at each of PDPT and PML4 (the two far-apart pages).
        assert_eq!(c.frames.len(), 4 + 3 + 2 + 2);
        assert_eq!(t.table_pages(), 12);
        // The contents stay in the x86 table: the lookup finds every page.
        for (i, &va) in vas.iter().enumerate() {
            assert_eq!(
                RadixPageTable::lookup(&t, ctx.store, VirtAddr(va)),
                Some((Pfn(0x9000 + i as u64), PageSize::Size4K))
            );
        }
    }

    #[test]
    fn x86_placement_references_the_tables_own_entries() {
        let (mut store, mut buddy, mut t) = table(Placement::X86);
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        t.map(&mut ctx, Vpn(0x123), Pfn(0x9000), PageSize::Size4K)
            .unwrap();
        let v = Vpn(0x123).addr();
        for level in 1..=5 {
            let at = x86_at(&t, ctx.store, v, level);
            assert_eq!(t.referenced(at, v, level), at);
        }
        assert_eq!(t.placement_frames(), 0);
        assert_eq!(t.table_pages(), 5);
    }
}
