//! A virtual memory area: the span of pages a process mapped, how the OS backs it
//! ([`MapKind`]), what it holds ([`Region`]), and which of its 2 MiB ranges THP may back.
//! A process keeps its VMAs; the layout (`os.layout`) places them.

use crate::addr::Vpn;

/// How a region is backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// Anonymous memory: 4 KiB pages, or 2 MiB with THP.
    Anon,
    /// Explicit 1 GiB pages (hugetlbfs `MAP_HUGE_1GB`), falling back to smaller pages when no
    /// free 1 GiB block exists.
    Huge1G,
    /// Anonymous memory in which `no_thp_per_mille` of every thousand 2 MiB ranges cannot get
    /// a huge page: data built from many allocations (GraphBIG's vertex and edge objects), some
    /// of which land in heap ranges THP does not back (grown in small increments, unaligned,
    /// or `MADV_NOHUGEPAGE`). Which ranges is a fixed hash of the range's number.
    AnonMixed { no_thp_per_mille: u16 },
}

/// A fraction of ranges (a config's `thp_ineligible`) in the thousandths the ranges' hash
/// picks by.
pub fn per_mille(fraction: f64) -> u16 {
    (fraction * 1000.0).round() as u16
}

/// A virtual memory area `[start, end)` in 4 KiB page numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    pub start: Vpn,
    pub end: Vpn,
    pub kind: MapKind,
    /// The whole user address space of a trace-driven process (`map_everything`), not an
    /// allocation: eager paging leaves it demand-paged, as populating it would take all memory.
    pub catch_all: bool,
    /// What the region holds (binary, heap, stack, a mapping...).
    pub role: Region,
}

impl Vma {
    /// Whether THP may back the 2 MiB range holding `vpn` with a huge page, when the OS
    /// leaves `os_no_thp_per_mille` of every thousand ranges of any region to 4 KiB pages
    /// (`os.thp_ineligible`). A region's own share (`AnonMixed`) applies where larger; the
    /// same fixed hash of the range's number picks the ranges for both.
    pub fn thp_eligible(&self, vpn: Vpn, os_no_thp_per_mille: u16) -> bool {
        let own = match self.kind {
            MapKind::AnonMixed { no_thp_per_mille } => no_thp_per_mille,
            _ => 0,
        };
        let no_thp_per_mille = own.max(os_no_thp_per_mille);
        if no_thp_per_mille == 0 {
            return true;
        }
        let mut x = (vpn.0 >> 9).wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        x % 1000 >= no_thp_per_mille as u64
    }
}

/// What a VMA holds. The OS pages every kind alike; the role is for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// An anonymous `mmap` (large `malloc`s, arrays, glibc arenas), or a trace's whole space.
    Mmap,
    /// The program's binary: text and read-only data, then data and bss.
    Binary,
    /// A shared library (the dynamic loader, libc, libstdc++...).
    Library,
    /// The brk heap: glibc's main arena, where small `malloc`s go.
    Heap,
    /// A thread's stack: the main thread's at the top, the others `mmap`ed by glibc.
    Stack,
}

impl Region {
    /// Memory the program allocated for its data (heap and mappings), not its binary,
    /// libraries or stacks.
    pub fn is_data(self) -> bool {
        matches!(self, Region::Mmap | Region::Heap)
    }
}
