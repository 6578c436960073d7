//! A simulated process: its VMAs, its page table, and the ground truth of what it has mapped.

use super::{FaultStats, FramePolicy};
use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::pt::{PageTable, PtContext};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// How a region is backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// Anonymous memory: 4 KiB pages, or 2 MiB with THP.
    Anon,
    /// Explicit 1 GiB pages (hugetlbfs `MAP_HUGE_1GB`), falling back to smaller pages when no
    /// free 1 GiB block exists.
    Huge1G,
}

/// A virtual memory area `[start, end)` in 4 KiB page numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    pub start: Vpn,
    pub end: Vpn,
    pub kind: MapKind,
}

/// Where `mmap` starts placing regions (16 TiB), far from null and below the 47-bit limit.
const MMAP_BASE: u64 = 0x1000_0000_0000;
const USER_TOP: u64 = 0x7fff_ffff_f000;

pub struct Process<T: PageTable> {
    pub pid: u16,
    pub pt: T,
    vmas: BTreeMap<u64, Vma>,
    next_va: u64,
    va_limit: u64,
    /// Ground truth per page size: page number at that size → first frame.
    truth: [FxHashMap<u64, Pfn>; 3],
    /// Mapped pages smaller than 2 MiB / 1 GiB inside each 2 MiB / 1 GiB region: a region with
    /// any cannot take a huge page without splitting or collapsing (which we do not model).
    small_in_2m: FxHashMap<u64, u32>,
    small_in_1g: FxHashMap<u64, u32>,
    /// Reverse map of the 4 KiB data pages, frame → page: the pages compaction may migrate.
    frames: FxHashMap<u64, Vpn>,
}

impl<T: PageTable> Process<T> {
    /// `va57`: the page table translates 57-bit virtual addresses (5-level radix).
    pub(super) fn new(pid: u16, pt: T, va57: bool) -> Process<T> {
        let va_limit = if va57 {
            0x00ff_ffff_ffff_f000
        } else {
            USER_TOP
        };
        Process {
            pid,
            pt,
            vmas: BTreeMap::new(),
            next_va: MMAP_BASE,
            va_limit,
            truth: Default::default(),
            small_in_2m: FxHashMap::default(),
            small_in_1g: FxHashMap::default(),
            frames: FxHashMap::default(),
        }
    }

    pub fn vmas(&self) -> impl Iterator<Item = &Vma> {
        self.vmas.values()
    }

    /// Mapped pages of each size (4K, 2M, 1G).
    pub fn mapped_pages(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.truth[i].len() as u64)
    }

    pub(super) fn mmap(&mut self, bytes: u64, kind: MapKind) -> Result<VirtAddr> {
        if bytes == 0 {
            return Err(Error::Workload("mmap of 0 bytes".into()));
        }
        // Large regions are aligned to the huge-page size so THP can back them (Linux aligns
        // anonymous mappings of 2 MiB and more the same way since 6.7).
        let align = match kind {
            MapKind::Huge1G => PageSize::Size1G.bytes(),
            MapKind::Anon if bytes >= PageSize::Size2M.bytes() => PageSize::Size2M.bytes(),
            MapKind::Anon => 4096,
        };
        let start = self.next_va.div_ceil(align) * align;
        let len = bytes.div_ceil(4096) * 4096;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.va_limit)
            .ok_or_else(|| {
                Error::Workload(format!(
                    "mmap of {bytes} bytes exhausts the virtual address space"
                ))
            })?;
        // One 2 MiB guard gap between regions, as unmapped holes separate real mappings.
        self.next_va = end + PageSize::Size2M.bytes();
        let vma = Vma {
            start: VirtAddr(start).vpn(),
            end: VirtAddr(end).vpn(),
            kind,
        };
        self.vmas.insert(vma.start.0, vma);
        Ok(VirtAddr(start))
    }

    pub(super) fn map_everything(&mut self) {
        let vma = Vma {
            start: Vpn(1), // page 0 stays unmapped, as null
            end: VirtAddr(self.va_limit).vpn(),
            kind: MapKind::Anon,
        };
        self.vmas.insert(vma.start.0, vma);
        self.next_va = self.va_limit;
    }

    pub fn vma_of(&self, vpn: Vpn) -> Option<&Vma> {
        self.vmas
            .range(..=vpn.0)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| vpn < v.end)
    }

    #[inline]
    pub fn truth(&self, va: VirtAddr) -> Option<(Pfn, PageSize)> {
        let vpn = va.vpn().0;
        if let Some(&p) = self.truth[0].get(&vpn) {
            return Some((p, PageSize::Size4K));
        }
        if let Some(&p) = self.truth[1].get(&(vpn >> 9)) {
            return Some((p, PageSize::Size2M));
        }
        self.truth[2]
            .get(&(vpn >> 18))
            .map(|&p| (p, PageSize::Size1G))
    }

    /// Whether the whole `size` page containing `vpn` lies in `vma` and holds no smaller page.
    fn huge_fits(&self, vma: &Vma, vpn: Vpn, size: PageSize) -> bool {
        let base = vpn.align_down(size);
        let inside = base >= vma.start && base.0 + size.base_pages() <= vma.end.0;
        let clean = match size {
            PageSize::Size2M => !self.small_in_2m.contains_key(&(base.0 >> 9)),
            PageSize::Size1G => !self.small_in_1g.contains_key(&(base.0 >> 18)),
            PageSize::Size4K => true,
        };
        inside && clean
    }

    pub(super) fn fault(
        &mut self,
        ctx: &mut PtContext,
        frames: &mut dyn FramePolicy,
        va: VirtAddr,
        thp: bool,
        stats: &mut FaultStats,
    ) -> Result<(Pfn, PageSize)> {
        if let Some(m) = self.truth(va) {
            return Ok(m); // spurious: already mapped (e.g. a racing walk)
        }
        let vpn = va.vpn();
        let vma = *self.vma_of(vpn).ok_or_else(|| {
            Error::Workload(format!(
                "segmentation fault: pid {} touched unmapped {va:?}",
                self.pid
            ))
        })?;
        let mut choice = None;
        if vma.kind == MapKind::Huge1G {
            if self.huge_fits(&vma, vpn, PageSize::Size1G) {
                choice = frames
                    .frame(ctx.buddy, self.pid, vpn, PageSize::Size1G)
                    .map(|p| (p, PageSize::Size1G));
            }
            if choice.is_none() {
                stats.huge_1g_fallbacks += 1;
            }
        }
        if choice.is_none() && (thp || vma.kind == MapKind::Huge1G) {
            if self.huge_fits(&vma, vpn, PageSize::Size2M) && ctx.buddy.has_free_block(9) {
                choice = frames
                    .frame(ctx.buddy, self.pid, vpn, PageSize::Size2M)
                    .map(|p| (p, PageSize::Size2M));
            }
            if choice.is_none() {
                stats.thp_fallbacks += 1;
            }
        }
        let (pfn, size) = match choice {
            Some(c) => c,
            None => {
                let p = frames
                    .frame(ctx.buddy, self.pid, vpn, PageSize::Size4K)
                    .ok_or_else(|| {
                    Error::OutOfMemory(format!(
                        "no free frame for pid {} at {va:?}; the footprint exceeds os.physmem.bytes \
                         (swap is not modelled yet)",
                        self.pid
                    ))
                })?;
                (p, PageSize::Size4K)
            }
        };
        let base = vpn.align_down(size);
        self.pt.map(ctx, base, pfn, size)?;
        self.truth[size.index()].insert(base.0 >> size.order(), pfn);
        if size != PageSize::Size1G {
            *self.small_in_1g.entry(base.0 >> 18).or_default() += 1;
        }
        if size == PageSize::Size4K {
            *self.small_in_2m.entry(base.0 >> 9).or_default() += 1;
            self.frames.insert(pfn.0, base);
            ctx.buddy.mark_movable([pfn]);
        }
        Ok((pfn, size))
    }

    /// Compaction moved the frame `old` to `new`: if it held one of this process's pages,
    /// remap the page (the caller shoots down its TLB entries) and return it.
    pub(super) fn migrate(
        &mut self,
        ctx: &mut PtContext,
        old: Pfn,
        new: Pfn,
    ) -> Result<Option<Vpn>> {
        let Some(vpn) = self.frames.remove(&old.0) else {
            return Ok(None);
        };
        self.pt.unmap(ctx, vpn, PageSize::Size4K);
        self.pt.map(ctx, vpn, new, PageSize::Size4K)?;
        self.truth[0].insert(vpn.0, new);
        self.frames.insert(new.0, vpn);
        Ok(Some(vpn))
    }

    pub(super) fn munmap(
        &mut self,
        ctx: &mut PtContext,
        va: VirtAddr,
        bytes: u64,
    ) -> Result<Vec<(Vpn, PageSize)>> {
        let start = va.vpn();
        let end = Vpn(VirtAddr(va.0 + bytes.div_ceil(4096) * 4096).vpn().0);
        // Pages overlapping the range; a huge page partially covered is unmapped whole.
        let mut gone = Vec::new();
        for size in PageSize::ALL {
            let lo = start.0 >> size.order();
            let hi = (end.0 + size.base_pages() - 1) >> size.order();
            let mut keys: Vec<u64> = if hi - lo <= self.truth[size.index()].len() as u64 {
                (lo..hi)
                    .filter(|k| self.truth[size.index()].contains_key(k))
                    .collect()
            } else {
                self.truth[size.index()]
                    .keys()
                    .copied()
                    .filter(|k| (lo..hi).contains(k))
                    .collect()
            };
            keys.sort_unstable();
            for k in keys {
                let base = Vpn(k << size.order());
                let pfn = self.truth[size.index()]
                    .remove(&k)
                    .expect("key just listed");
                self.pt.unmap(ctx, base, size);
                if size == PageSize::Size4K {
                    self.frames.remove(&pfn.0);
                    ctx.buddy.unmark_movable(pfn);
                }
                ctx.buddy.free(pfn, size.order());
                if size != PageSize::Size1G {
                    dec(&mut self.small_in_1g, base.0 >> 18);
                }
                if size == PageSize::Size4K {
                    dec(&mut self.small_in_2m, base.0 >> 9);
                }
                gone.push((base, size));
            }
        }
        self.trim_vmas(start, end);
        Ok(gone)
    }

    /// Remove `[start, end)` from the VMAs, splitting any that straddle it.
    fn trim_vmas(&mut self, start: Vpn, end: Vpn) {
        let hit: Vec<Vma> = self
            .vmas
            .values()
            .filter(|v| v.start < end && start < v.end)
            .copied()
            .collect();
        for v in hit {
            self.vmas.remove(&v.start.0);
            if v.start < start {
                self.vmas.insert(v.start.0, Vma { end: start, ..v });
            }
            if end < v.end {
                self.vmas.insert(end.0, Vma { start: end, ..v });
            }
        }
    }
}

fn dec(map: &mut FxHashMap<u64, u32>, key: u64) {
    if let Some(c) = map.get_mut(&key) {
        *c -= 1;
        if *c == 0 {
            map.remove(&key);
        }
    }
}
