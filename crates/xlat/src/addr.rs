//! Address and page-number newtypes.
//!
//! Virtual and physical addresses are different types so that the compiler catches the classic
//! simulator bug of indexing a physically-indexed structure with a virtual address. Page numbers
//! carry no page size: a `Vpn`/`Pfn` is always in units of 4 KiB base pages, and a huge page is
//! named by its first base page. `PageSize` converts between the two views.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Bytes in a base page.
pub const BASE_PAGE_BYTES: u64 = 4096;
/// log2 of the base page size.
pub const BASE_PAGE_SHIFT: u32 = 12;

/// `bytes` rounded up to whole 4 KiB pages: what an array of that many bytes occupies.
pub fn page_rounded(bytes: u64) -> u64 {
    bytes.div_ceil(BASE_PAGE_BYTES) * BASE_PAGE_BYTES
}
/// Bytes in a cache line (every structure in xlat uses 64-byte lines).
pub const LINE_BYTES: u64 = 64;
/// log2 of the cache line size.
pub const LINE_SHIFT: u32 = 6;

macro_rules! newtype {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }
    };
}

newtype!(/// A virtual address.
    VirtAddr);
newtype!(/// A physical address.
    PhysAddr);
newtype!(/// A virtual page number in 4 KiB units.
    Vpn);
newtype!(/// A physical frame number in 4 KiB units.
    Pfn);

impl VirtAddr {
    pub fn vpn(self) -> Vpn {
        Vpn(self.0 >> BASE_PAGE_SHIFT)
    }
    /// Byte offset inside a page of `size`.
    pub fn offset_in(self, size: PageSize) -> u64 {
        self.0 & size.mask()
    }
}

impl PhysAddr {
    pub fn pfn(self) -> Pfn {
        Pfn(self.0 >> BASE_PAGE_SHIFT)
    }
    /// The cache-line number of this address.
    pub fn line(self) -> u64 {
        self.0 >> LINE_SHIFT
    }
}

impl Vpn {
    pub fn addr(self) -> VirtAddr {
        VirtAddr(self.0 << BASE_PAGE_SHIFT)
    }
    /// The first base page of the `size` page containing this one.
    pub fn align_down(self, size: PageSize) -> Vpn {
        Vpn(self.0 & !(size.base_pages() - 1))
    }
}

impl Pfn {
    pub fn addr(self) -> PhysAddr {
        PhysAddr(self.0 << BASE_PAGE_SHIFT)
    }
}

/// The page sizes of x86-64.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4K")]
    Size4K,
    #[serde(rename = "2M")]
    Size2M,
    #[serde(rename = "1G")]
    Size1G,
}

/// A set of page sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeSet(u8);

impl SizeSet {
    pub fn of(sizes: &[PageSize]) -> SizeSet {
        SizeSet(sizes.iter().fold(0, |bits, s| bits | 1 << s.index()))
    }
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
    /// The sizes whose count is not zero (`counts[i]` for the size of index `i`).
    pub fn from_counts(counts: &[u32]) -> SizeSet {
        SizeSet(
            counts
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .fold(0, |b, (i, _)| b | 1 << i),
        )
    }
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }
    /// Mask of the in-page offset bits.
    pub const fn mask(self) -> u64 {
        self.bytes() - 1
    }
    /// Number of 4 KiB base pages in one page of this size.
    pub const fn base_pages(self) -> u64 {
        1 << (self.shift() - BASE_PAGE_SHIFT)
    }
    /// Buddy-allocator order of one page of this size.
    pub const fn order(self) -> u32 {
        self.shift() - BASE_PAGE_SHIFT
    }
    /// Dense index 0..3, for per-size arrays.
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size2M => 1,
            PageSize::Size1G => 2,
        }
    }
    pub const fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4K",
            PageSize::Size2M => "2M",
            PageSize::Size1G => "1G",
        }
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Translate `va` through a mapping of a `size` page whose first frame is `base`.
pub fn translate(va: VirtAddr, base: Pfn, size: PageSize) -> PhysAddr {
    PhysAddr((base.0 << BASE_PAGE_SHIFT) | va.offset_in(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_geometry() {
        assert_eq!(PageSize::Size4K.bytes(), 4096);
        assert_eq!(PageSize::Size2M.base_pages(), 512);
        assert_eq!(PageSize::Size1G.order(), 18);
        assert_eq!(Vpn(0x12345).align_down(PageSize::Size2M), Vpn(0x12200));
    }

    #[test]
    fn translate_keeps_offset() {
        let va = VirtAddr(0x4020_1234);
        assert_eq!(
            translate(va, Pfn(0x800), PageSize::Size2M),
            PhysAddr(0x80_1234)
        );
        assert_eq!(
            translate(va, Pfn(0x800), PageSize::Size4K),
            PhysAddr(0x80_0234)
        );
    }
}
