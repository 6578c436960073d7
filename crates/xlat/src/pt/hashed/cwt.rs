//! The contents of the Cuckoo Walk Tables (ECPT; ME-HPT Table III): for each 2 MiB region,
//! which page sizes hold translations in it (4K, 2M), and likewise for each 1 GiB region
//! (4K, 2M, 1G). The walker's Cuckoo Walk Caches cache these entries to probe only the tables
//! that can hold a translation. The OS keeps them up to date on every map and unmap; each
//! region entry counts its pages per size so that unmapping the last one clears the bit.
//!
//! The tables live in simulated memory, where the walker reads them on a CWC miss: one byte
//! per region (its `SizeSet`), the bytes of consecutive regions packed into 4 KiB frames that
//! the OS allocates when a span of regions gets its first mapping (a PMD-CWT frame covers
//! 4096 2 MiB regions, 8 GiB of address space; a PUD-CWT frame 4096 1 GiB regions). The
//! per-size counts behind each byte are the OS's bookkeeping.

use crate::addr::{PageSize, Pfn, PhysAddr, Vpn};
use crate::error::Result;
use crate::pt::store::PtStore;
use crate::pt::PtContext;
use rustc_hash::FxHashMap;

/// A set of page sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeSet(u8);

impl SizeSet {
    pub fn contains(self, size: PageSize) -> bool {
        self.0 & (1 << size.index()) != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = PageSize> {
        PageSize::ALL.into_iter().filter(move |&s| self.contains(s))
    }
    pub fn bits(self) -> u8 {
        self.0
    }
    pub fn from_bits(bits: u8) -> SizeSet {
        SizeSet(bits & 0b111)
    }
    fn from_counts(counts: &[u32]) -> SizeSet {
        SizeSet(
            counts
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .fold(0, |b, (i, _)| b | 1 << i),
        )
    }
}

#[derive(Clone, Debug, Default)]
pub struct Cwt {
    /// Per 2 MiB region number: pages of 4K and 2M mapped in it.
    pmd: FxHashMap<u64, [u32; 2]>,
    /// Per 1 GiB region number: pages of 4K, 2M and 1G mapped in it.
    pud: FxHashMap<u64, [u32; 3]>,
    pmd_image: Image,
    pud_image: Image,
}

/// Regions whose entry bytes share one frame.
const REGIONS_PER_FRAME: u64 = 4096;

/// One CWT's bytes in simulated memory: a frame per span of `REGIONS_PER_FRAME` regions.
#[derive(Clone, Debug, Default)]
struct Image {
    frames: FxHashMap<u64, Pfn>,
}

impl Image {
    fn addr(&self, region: u64) -> Option<PhysAddr> {
        let frame = self.frames.get(&(region / REGIONS_PER_FRAME))?;
        Some(PhysAddr(frame.addr().0 + region % REGIONS_PER_FRAME))
    }

    /// Store `set` as the entry of `region`, allocating its frame on first use.
    fn write(&mut self, ctx: &mut PtContext, region: u64, set: SizeSet) -> Result<()> {
        if let std::collections::hash_map::Entry::Vacant(slot) =
            self.frames.entry(region / REGIONS_PER_FRAME)
        {
            slot.insert(ctx.alloc_table_frame()?);
        }
        let addr = self.addr(region).expect("frame just ensured");
        let word = PhysAddr(addr.0 & !7);
        let shift = (addr.0 & 7) * 8;
        let old = ctx.store.read(word);
        ctx.store
            .write(word, (old & !(0xff << shift)) | ((set.0 as u64) << shift));
        Ok(())
    }

    fn read(&self, store: &PtStore, region: u64) -> SizeSet {
        self.addr(region).map_or(SizeSet::default(), |addr| {
            SizeSet((store.read(PhysAddr(addr.0 & !7)) >> ((addr.0 & 7) * 8)) as u8)
        })
    }
}

fn region_2m(vpn: Vpn) -> u64 {
    vpn.0 >> PageSize::Size2M.order()
}
fn region_1g(vpn: Vpn) -> u64 {
    vpn.0 >> PageSize::Size1G.order()
}

impl Cwt {
    /// Record a new mapping of a `size` page at `vpn` (and write the changed entries).
    pub fn add(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Result<()> {
        if size != PageSize::Size1G {
            self.pmd.entry(region_2m(vpn)).or_default()[size.index()] += 1;
            self.pmd_image
                .write(ctx, region_2m(vpn), self.sizes_in_2m(vpn))?;
        }
        self.pud.entry(region_1g(vpn)).or_default()[size.index()] += 1;
        self.pud_image
            .write(ctx, region_1g(vpn), self.sizes_in_1g(vpn))
    }

    /// Record the removal of a mapping of a `size` page at `vpn`.
    pub fn remove(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Result<()> {
        fn dec<const N: usize>(map: &mut FxHashMap<u64, [u32; N]>, key: u64, i: usize) {
            if let Some(c) = map.get_mut(&key) {
                c[i] -= 1;
                if c.iter().all(|&n| n == 0) {
                    map.remove(&key);
                }
            }
        }
        if size != PageSize::Size1G {
            dec(&mut self.pmd, region_2m(vpn), size.index());
            self.pmd_image
                .write(ctx, region_2m(vpn), self.sizes_in_2m(vpn))?;
        }
        dec(&mut self.pud, region_1g(vpn), size.index());
        self.pud_image
            .write(ctx, region_1g(vpn), self.sizes_in_1g(vpn))
    }

    /// Physical address of the PMD-CWT entry of the 2 MiB region of `vpn` (none if no page was
    /// ever mapped in its span).
    pub fn pmd_entry_addr(&self, vpn: Vpn) -> Option<PhysAddr> {
        self.pmd_image.addr(region_2m(vpn))
    }

    /// Physical address of the PUD-CWT entry of the 1 GiB region of `vpn`.
    pub fn pud_entry_addr(&self, vpn: Vpn) -> Option<PhysAddr> {
        self.pud_image.addr(region_1g(vpn))
    }

    /// The PMD-CWT entry of `vpn`'s 2 MiB region as stored in memory (what a walk reads).
    pub fn read_pmd(&self, store: &PtStore, vpn: Vpn) -> SizeSet {
        self.pmd_image.read(store, region_2m(vpn))
    }

    /// The PUD-CWT entry of `vpn`'s 1 GiB region as stored in memory.
    pub fn read_pud(&self, store: &PtStore, vpn: Vpn) -> SizeSet {
        self.pud_image.read(store, region_1g(vpn))
    }

    /// Bytes of memory the two tables occupy.
    pub fn bytes(&self) -> u64 {
        (self.pmd_image.frames.len() + self.pud_image.frames.len()) as u64 * 4096
    }

    /// Page sizes mapped in the 2 MiB region containing `vpn` (a PMD-CWT entry).
    pub fn sizes_in_2m(&self, vpn: Vpn) -> SizeSet {
        self.pmd
            .get(&region_2m(vpn))
            .map_or(SizeSet::default(), |c| SizeSet::from_counts(c))
    }

    /// Page sizes mapped in the 1 GiB region containing `vpn` (a PUD-CWT entry).
    pub fn sizes_in_1g(&self, vpn: Vpn) -> SizeSet {
        self.pud
            .get(&region_1g(vpn))
            .map_or(SizeSet::default(), |c| SizeSet::from_counts(c))
    }

    /// Regions with an entry: (2 MiB, 1 GiB).
    pub fn regions(&self) -> (usize, usize) {
        (self.pmd.len(), self.pud.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PageSize::*;

    #[test]
    fn tracks_sizes_per_region_in_memory() {
        let mut store = PtStore::new();
        let mut buddy = crate::os::physmem::BuddyAllocator::new(1024);
        let mut ctx = PtContext {
            store: &mut store,
            buddy: &mut buddy,
        };
        let mut c = Cwt::default();
        let a = Vpn(0x4_0000 + 3); // in 1 GiB region 1, 2 MiB region 0x200
        c.add(&mut ctx, a, Size4K).unwrap();
        c.add(&mut ctx, Vpn(0x4_0000 + 512), Size2M).unwrap();
        // What a walker reads from memory is what the OS recorded.
        assert_eq!(c.read_pmd(ctx.store, a), c.sizes_in_2m(a));
        assert_eq!(c.read_pud(ctx.store, a), c.sizes_in_1g(a));
        assert_ne!(c.pmd_entry_addr(a), c.pmd_entry_addr(Vpn(0x4_0000 + 512)));
        assert_eq!(c.sizes_in_2m(a).iter().collect::<Vec<_>>(), vec![Size4K]);
        assert_eq!(
            c.sizes_in_1g(a).iter().collect::<Vec<_>>(),
            vec![Size4K, Size2M]
        );
        c.add(&mut ctx, Vpn(0), Size1G).unwrap();
        assert!(c.sizes_in_2m(Vpn(0)).is_empty());
        assert!(c.sizes_in_1g(Vpn(5)).contains(Size1G));
        assert!(c.read_pud(ctx.store, Vpn(5)).contains(Size1G));
        c.remove(&mut ctx, a, Size4K).unwrap();
        assert!(c.sizes_in_2m(a).is_empty());
        assert!(c.read_pmd(ctx.store, a).is_empty());
        assert_eq!(c.sizes_in_1g(a).iter().collect::<Vec<_>>(), vec![Size2M]);
        assert_eq!(c.regions(), (1, 2));
    }
}
