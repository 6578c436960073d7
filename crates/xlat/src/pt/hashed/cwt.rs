//! The contents of the Cuckoo Walk Tables (ECPT; ME-HPT Table III): for each 2 MiB region,
//! which page sizes hold translations in it (4K, 2M), and likewise for each 1 GiB region
//! (4K, 2M, 1G). The walker's Cuckoo Walk Caches cache these entries to probe only the tables
//! that can hold a translation. The OS keeps them up to date on every map and unmap; each
//! region entry counts its pages per size so that unmapping the last one clears the bit.
//! (Where the CWTs themselves live in memory is the walker's concern, not modelled here.)

use crate::addr::{PageSize, Vpn};
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
}

fn region_2m(vpn: Vpn) -> u64 {
    vpn.0 >> PageSize::Size2M.order()
}
fn region_1g(vpn: Vpn) -> u64 {
    vpn.0 >> PageSize::Size1G.order()
}

impl Cwt {
    /// Record a new mapping of a `size` page at `vpn`.
    pub fn add(&mut self, vpn: Vpn, size: PageSize) {
        if size != PageSize::Size1G {
            self.pmd.entry(region_2m(vpn)).or_default()[size.index()] += 1;
        }
        self.pud.entry(region_1g(vpn)).or_default()[size.index()] += 1;
    }

    /// Record the removal of a mapping of a `size` page at `vpn`.
    pub fn remove(&mut self, vpn: Vpn, size: PageSize) {
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
        }
        dec(&mut self.pud, region_1g(vpn), size.index());
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
    fn tracks_sizes_per_region() {
        let mut c = Cwt::default();
        let a = Vpn(0x4_0000 + 3); // in 1 GiB region 1, 2 MiB region 0x200
        c.add(a, Size4K);
        c.add(Vpn(0x4_0000 + 512), Size2M);
        assert_eq!(c.sizes_in_2m(a).iter().collect::<Vec<_>>(), vec![Size4K]);
        assert_eq!(
            c.sizes_in_1g(a).iter().collect::<Vec<_>>(),
            vec![Size4K, Size2M]
        );
        c.add(Vpn(0), Size1G);
        assert!(c.sizes_in_2m(Vpn(0)).is_empty());
        assert!(c.sizes_in_1g(Vpn(5)).contains(Size1G));
        c.remove(a, Size4K);
        assert!(c.sizes_in_2m(a).is_empty());
        assert_eq!(c.sizes_in_1g(a).iter().collect::<Vec<_>>(), vec![Size2M]);
        assert_eq!(c.regions(), (1, 2));
    }
}
