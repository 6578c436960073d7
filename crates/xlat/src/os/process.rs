//! A simulated process: its VMAs, its page table, and the ground truth of what it has mapped.

use super::layout::{self, LayoutKind, LinuxLayout};
use super::vma::{MapKind, Region, Vma};
use super::{FaultStats, FramePolicy};
use crate::addr::{page_rounded, PageSize, Pfn, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem;
use crate::pt::direct::DirectSegment;
use crate::pt::{PageTable, PtContext};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// Transparent huge pages as the OS applies them on a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Thp {
    Never,
    /// 2 MiB pages where they fit, except in `no_thp_per_mille` of every thousand 2 MiB
    /// ranges of each region (`os.thp_ineligible`).
    Always {
        no_thp_per_mille: u16,
    },
}

impl Thp {
    /// Whether THP backs the 2 MiB range of `vpn` in `vma` with a huge page where one fits.
    fn backs(self, vma: &Vma, vpn: Vpn) -> bool {
        match self {
            Thp::Never => false,
            Thp::Always { no_thp_per_mille } => vma.thp_eligible(vpn, no_thp_per_mille),
        }
    }
}

/// How the OS backs a VMA on a fault.
#[derive(Clone, Copy, Debug)]
pub(super) struct Paging {
    /// Transparent huge pages.
    pub thp: Thp,
    /// Eager paging: the first fault in a VMA maps all of it.
    pub eager: bool,
}

/// Where `os.layout = "packed"` starts placing regions (16 TiB), far from null and below the
/// 47-bit limit.
const MMAP_BASE: u64 = 0x1000_0000_0000;
const USER_TOP: u64 = layout::TASK_SIZE;

/// How a process places its regions (`os.layout`).
#[derive(Clone, Copy, Debug)]
enum Placement {
    /// Upward from `MMAP_BASE`, a 2 MiB gap after each region: `next` is where the next may
    /// start.
    Packed { next: u64 },
    /// Linux's layout, with the program break `brk` (the brk heap's end).
    Linux { layout: LinuxLayout, brk: u64 },
}

pub struct Process<T: PageTable> {
    pub pid: u16,
    pub pt: T,
    vmas: BTreeMap<u64, Vma>,
    place: Placement,
    va_limit: u64,
    /// Ground truth per page size: page number at that size → first frame.
    truth: [FxHashMap<u64, Pfn>; 3],
    /// Mapped pages smaller than 2 MiB / 1 GiB inside each 2 MiB / 1 GiB region: a region with
    /// any cannot take a huge page without splitting or collapsing (which we do not model).
    small_in_2m: FxHashMap<u64, u32>,
    small_in_1g: FxHashMap<u64, u32>,
    /// Reverse map of the 4 KiB data pages, frame → page: the pages compaction may migrate.
    frames: FxHashMap<u64, Vpn>,
    /// Pages in the backing store, per page size: page number at that size. A swapped page
    /// still counts in `small_in_2m` / `small_in_1g`, so its region takes no larger page over
    /// it while it is out.
    swapped: [FxHashSet<u64>; 3],
    /// The direct segment mapping the process's primary region (`os.direct_segment`): the
    /// segment registers of its context, with its escape filter.
    pub segment: Option<DirectSegment>,
    /// The primary region's window of virtual addresses `(next, end)`: large mappings go
    /// there one after the other, so that one segment can grow to map them all.
    primary: Option<(u64, u64)>,
    /// The whole window `(start, end)` set aside for the primary region under the Linux
    /// layout, which other mappings stay out of.
    window: Option<(u64, u64)>,
}

/// Virtual addresses set aside for a primary region (1 TiB); other mappings go above it.
const PRIMARY_WINDOW: u64 = 1 << 40;

impl<T: PageTable> Process<T> {
    /// `va57`: the page table translates 57-bit virtual addresses (5-level radix). `layout`
    /// places the regions; under the Linux layout the process starts as `exec` and the dynamic
    /// loader leave it (binary, main stack, shared libraries), placed with `aslr` from `seed`.
    pub(super) fn new(
        pid: u16,
        pt: T,
        va57: bool,
        layout: LayoutKind,
        aslr: bool,
        seed: u64,
    ) -> Process<T> {
        let va_limit = if va57 {
            0x00ff_ffff_ffff_f000
        } else {
            USER_TOP
        };
        let place = match layout {
            LayoutKind::Packed => Placement::Packed { next: MMAP_BASE },
            LayoutKind::Linux => {
                let layout = LinuxLayout::new(aslr, seed, pid);
                Placement::Linux {
                    layout,
                    brk: layout.brk_start,
                }
            }
        };
        let mut p = Process {
            pid,
            pt,
            vmas: BTreeMap::new(),
            place,
            va_limit,
            truth: Default::default(),
            small_in_2m: FxHashMap::default(),
            small_in_1g: FxHashMap::default(),
            frames: FxHashMap::default(),
            swapped: Default::default(),
            segment: None,
            primary: None,
            window: None,
        };
        if let Placement::Linux { layout, .. } = place {
            for (start, len, role) in layout.fixed_regions() {
                p.insert_vma(start, start + len, MapKind::Anon, role);
            }
            for &len in LinuxLayout::libraries() {
                // File-backed: not aligned for THP. The user space has room for them.
                let _ = p.place(len, 4096, MapKind::Anon, Region::Library);
            }
        }
        p
    }

    fn insert_vma(&mut self, start: u64, end: u64, kind: MapKind, role: Region) {
        let vma = Vma {
            start: VirtAddr(start).vpn(),
            end: VirtAddr(end).vpn(),
            kind,
            catch_all: false,
            role,
        };
        self.vmas.insert(vma.start.0, vma);
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
        self.place(bytes, layout::alignment(bytes, kind), kind, Region::Mmap)
    }

    /// Place a region of `bytes` (rounded up to pages) aligned to `align`, as the layout does.
    fn place(&mut self, bytes: u64, align: u64, kind: MapKind, role: Region) -> Result<VirtAddr> {
        let len = page_rounded(bytes);
        let exhausted = || {
            Error::Workload(format!(
                "mmap of {bytes} bytes exhausts the virtual address space"
            ))
        };
        let start = match &mut self.place {
            Placement::Packed { next } => {
                let start = next.div_ceil(align) * align;
                let end = start
                    .checked_add(len)
                    .filter(|&e| e <= self.va_limit)
                    .ok_or_else(exhausted)?;
                // One 2 MiB guard gap between regions, as unmapped holes separate real
                // mappings.
                *next = end + PageSize::Size2M.bytes();
                start
            }
            Placement::Linux { layout, .. } => {
                layout::top_down(&self.vmas, self.window, len, align, 0, layout.mmap_base)
                    .ok_or_else(exhausted)?
            }
        };
        self.insert_vma(start, start + len, kind, role);
        Ok(VirtAddr(start))
    }

    /// Grow the brk heap by `bytes` (rounded up to pages), as `sbrk` does; returns the old
    /// program break, where the new memory starts. `None` under a layout without a brk heap
    /// (`packed`). Memory of another `kind` than the heap's top gets a VMA of its own.
    pub(super) fn sbrk(&mut self, bytes: u64, kind: MapKind) -> Result<Option<VirtAddr>> {
        let Placement::Linux { brk, .. } = self.place else {
            return Ok(None);
        };
        if bytes == 0 {
            return Ok(Some(VirtAddr(brk)));
        }
        let new = brk + page_rounded(bytes);
        let below = self
            .vmas
            .range(..new >> 12)
            .next_back()
            .map(|(_, v)| *v)
            .filter(|v| v.end.addr().0 > brk);
        let in_window = self.window.is_some_and(|(s, e)| s < new && brk < e);
        if below.is_some() || in_window || new > self.va_limit {
            return Err(Error::Workload(format!(
                "brk of pid {} cannot grow by {bytes} bytes past {:#x}: a mapping is in the way",
                self.pid, brk
            )));
        }
        let top = self.vmas.range(..brk >> 12).next_back().map(|(_, v)| *v);
        match top {
            Some(v) if v.role == Region::Heap && v.end.addr().0 == brk && v.kind == kind => {
                self.vmas.insert(
                    v.start.0,
                    Vma {
                        end: VirtAddr(new).vpn(),
                        ..v
                    },
                );
            }
            _ => self.insert_vma(brk, new, kind, Region::Heap),
        }
        if let Placement::Linux { brk: b, .. } = &mut self.place {
            *b = new;
        }
        Ok(Some(VirtAddr(brk)))
    }

    /// Map a new thread's stack, as glibc's `pthread_create` does (an 8 MiB mapping, its
    /// guard page included); `None` under a layout without stacks (`packed`).
    pub(super) fn thread_stack(&mut self) -> Result<Option<VirtAddr>> {
        if let Placement::Packed { .. } = self.place {
            return Ok(None);
        }
        let align = layout::alignment(layout::STACK_LIMIT, MapKind::Anon);
        self.place(layout::STACK_LIMIT, align, MapKind::Anon, Region::Stack)
            .map(Some)
    }

    /// Map `bytes` in the primary region (Basu et al.'s abstraction for big-memory data):
    /// right after the region's last mapping, with no gap, so that the region stays
    /// contiguous. The first call sets the window aside.
    pub(super) fn mmap_primary(&mut self, bytes: u64, kind: MapKind) -> Result<VirtAddr> {
        let len = page_rounded(bytes);
        let huge = PageSize::Size2M.bytes();
        let (next, end) = match self.primary {
            Some(w) => w,
            None => {
                let start = match self.place {
                    Placement::Packed { next } => next.div_ceil(huge) * huge,
                    Placement::Linux { layout, .. } => {
                        let at = layout::top_down(
                            &self.vmas,
                            None,
                            PRIMARY_WINDOW,
                            huge,
                            0,
                            layout.mmap_base,
                        );
                        match at {
                            Some(at) => at,
                            None => return self.mmap(bytes, kind),
                        }
                    }
                };
                let end = start + PRIMARY_WINDOW;
                if end > self.va_limit {
                    return self.mmap(bytes, kind);
                }
                match &mut self.place {
                    Placement::Packed { next } => *next = end + huge,
                    Placement::Linux { .. } => self.window = Some((start, end)),
                }
                (start, end)
            }
        };
        if next + len > end {
            return self.mmap(bytes, kind);
        }
        self.primary = Some((next + len, end));
        self.insert_vma(next, next + len, kind, Region::Mmap);
        Ok(VirtAddr(next))
    }

    /// Make the whole user space one demand-paged region (a trace's process): what the
    /// layout put there before goes, since the trace's own addresses say where its regions are.
    pub(super) fn map_everything(&mut self) {
        self.vmas.clear();
        self.primary = None;
        self.window = None;
        let vma = Vma {
            start: Vpn(1), // page 0 stays unmapped, as null
            end: VirtAddr(self.va_limit).vpn(),
            kind: MapKind::Anon,
            catch_all: true,
            role: Region::Mmap,
        };
        self.vmas.insert(vma.start.0, vma);
        if let Placement::Packed { next } = &mut self.place {
            *next = self.va_limit;
        }
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

    /// Handle a fault at `va`: map the page containing it (demand paging) or, with `eager`,
    /// every page of its VMA at once (eager paging). Returns the mapping of `va`.
    pub(super) fn fault(
        &mut self,
        ctx: &mut PtContext,
        frames: &mut dyn FramePolicy,
        va: VirtAddr,
        paging: Paging,
        stats: &mut FaultStats,
    ) -> Result<(Pfn, PageSize)> {
        if let Some(m) = self.truth(va) {
            return Ok(m); // spurious: already mapped (e.g. a racing walk)
        }
        let vpn = va.vpn();
        if let Some(pfn) = self.segment_frame(vpn) {
            // Paging reached a page the segment maps (its escape filter's false positive):
            // the page table maps it where the segment does (Gandhi §V).
            self.install(ctx, vpn, pfn, PageSize::Size4K, stats)?;
            return Ok((pfn, PageSize::Size4K));
        }
        let vma = *self.vma_of(vpn).ok_or_else(|| {
            Error::Workload(format!(
                "segmentation fault: pid {} touched unmapped {va:?}",
                self.pid
            ))
        })?;
        let swapped = self.swapped_at(vpn);
        if paging.eager && !vma.catch_all {
            debug_assert!(
                swapped.is_none(),
                "eager paging with swap is refused by config"
            );
            self.populate_vma(ctx, frames, &vma, paging.thp, stats)?;
            return self.truth(va).ok_or_else(|| {
                Error::Workload(format!(
                    "eager paging left {va:?} of pid {} unmapped",
                    self.pid
                ))
            });
        }
        let (pfn, size) = self.demand_frame(ctx, frames, &vma, vpn, paging.thp, stats)?;
        self.install(ctx, vpn.align_down(size), pfn, size, stats)?;
        if let Some(out) = swapped {
            self.swapped_in(vpn, out, size);
            stats.major += 1;
        }
        Ok((pfn, size))
    }

    /// The frame the direct segment gives the page `vpn`, if the segment maps it.
    pub fn segment_frame(&self, vpn: Vpn) -> Option<Pfn> {
        let ds = self.segment.as_ref()?;
        let a = vpn.addr().0;
        ds.maps(a).then(|| Pfn(ds.seg.apply(a) >> 12))
    }

    /// The size of the swapped page holding `vpn`, if it is in the backing store.
    fn swapped_at(&self, vpn: Vpn) -> Option<PageSize> {
        PageSize::ALL
            .into_iter()
            .find(|s| self.swapped[s.index()].contains(&(vpn.0 >> s.order())))
    }

    /// Pages of this process in the backing store.
    pub fn swapped_pages(&self) -> u64 {
        self.swapped.iter().map(|s| s.len() as u64).sum()
    }

    /// The swapped `out`-sized page holding `vpn` came back as the `size` page holding it
    /// (just installed): it leaves the backing store. A page that comes back smaller (no free
    /// huge frame) leaves the rest of it swapped, as pages of `size`.
    fn swapped_in(&mut self, vpn: Vpn, out: PageSize, size: PageSize) {
        let base = vpn.align_down(out);
        self.swapped[out.index()].remove(&(base.0 >> out.order()));
        // The installed page counted itself; the swapped one stops counting.
        self.count_small(base, out, false);
        if size == out {
            return;
        }
        let here = vpn.align_down(size);
        let mut at = base.0;
        while at < base.0 + out.base_pages() {
            if at != here.0 {
                self.swapped[size.index()].insert(at >> size.order());
                self.count_small(Vpn(at), size, true);
            }
            at += size.base_pages();
        }
    }

    /// Count (or uncount) the `size` page at `base` in the small-page counts of its 2 MiB and
    /// 1 GiB regions.
    fn count_small(&mut self, base: Vpn, size: PageSize, add: bool) {
        let bump = |map: &mut FxHashMap<u64, u32>, key: u64| {
            if add {
                *map.entry(key).or_default() += 1;
            } else {
                dec(map, key);
            }
        };
        if size != PageSize::Size1G {
            bump(&mut self.small_in_1g, base.0 >> 18);
        }
        if size == PageSize::Size4K {
            bump(&mut self.small_in_2m, base.0 >> 9);
        }
    }

    /// Page out the `size` page at `base`: unmap it from the page table and the ground truth
    /// and remember it as swapped. Returns the frame it held, which the caller frees unless
    /// another page holds it already (a RestSeg slot taken by the page that evicted it).
    pub(super) fn swap_out(
        &mut self,
        ctx: &mut PtContext,
        base: Vpn,
        size: PageSize,
    ) -> Result<Pfn> {
        let key = base.0 >> size.order();
        let pfn = self.truth[size.index()].remove(&key).ok_or_else(|| {
            Error::Workload(format!(
                "pid {} has no {size} page at {:?} to page out",
                self.pid,
                base.addr()
            ))
        })?;
        // The table may have lost the mapping already, if the page that took the frame is
        // this process's and its entry replaced this one's.
        self.pt.unmap(ctx, base, size);
        if size == PageSize::Size4K && self.frames.get(&pfn.0) == Some(&base) {
            self.frames.remove(&pfn.0);
            ctx.buddy.unmark_movable(pfn);
        }
        self.swapped[size.index()].insert(key);
        Ok(pfn)
    }

    /// Demand paging: the largest page the VMA, THP and free memory allow at `vpn`, and its
    /// frame from the frame policy.
    fn demand_frame(
        &self,
        ctx: &mut PtContext,
        frames: &mut dyn FramePolicy,
        vma: &Vma,
        vpn: Vpn,
        thp: Thp,
        stats: &mut FaultStats,
    ) -> Result<(Pfn, PageSize)> {
        let mut choice = None;
        if vma.kind == MapKind::Huge1G {
            if self.huge_fits(vma, vpn, PageSize::Size1G) {
                choice = frames
                    .frame(ctx.buddy, self.pid, vpn, PageSize::Size1G)
                    .map(|p| (p, PageSize::Size1G));
            }
            if choice.is_none() {
                stats.huge_1g_fallbacks += 1;
            }
        }
        if choice.is_none() && (thp.backs(vma, vpn) || vma.kind == MapKind::Huge1G) {
            if self.huge_fits(vma, vpn, PageSize::Size2M) && ctx.buddy.has_free_block(9) {
                choice = frames
                    .frame(ctx.buddy, self.pid, vpn, PageSize::Size2M)
                    .map(|p| (p, PageSize::Size2M));
            }
            if choice.is_none() {
                stats.thp_fallbacks += 1;
            }
        }
        match choice {
            Some(c) => Ok(c),
            None => frames
                .frame(ctx.buddy, self.pid, vpn, PageSize::Size4K)
                .map(|p| (p, PageSize::Size4K))
                .ok_or_else(|| self.out_of_memory(vpn, frames.refusal())),
        }
    }

    /// No frame for `vpn`: memory is full, or the frame policy says why it gave none.
    fn out_of_memory(&self, vpn: Vpn, refusal: Option<String>) -> Error {
        if let Some(why) = refusal {
            return Error::OutOfMemory(format!(
                "no frame for pid {} at {:?}: {why}",
                self.pid,
                vpn.addr()
            ));
        }
        Error::OutOfMemory(format!(
            "no free frame for pid {} at {:?}; the footprint exceeds os.physmem.bytes \
             (raise it, or set os.swap.enabled = true to page out)",
            self.pid,
            vpn.addr()
        ))
    }

    /// Eager paging (RMM, Karakostas et al. ISCA'15): back every unmapped page of `vma`
    /// now, with frames taken in the largest blocks the frame policy has, so that consecutive
    /// pages get consecutive frames (the contiguity range translations need). Blocks are taken
    /// largest first, so each block starts at a virtual offset in the VMA that is a multiple of
    /// its size: a block of 2 MiB or more maps 2 MiB pages (with THP) from an aligned VMA.
    fn populate_vma(
        &mut self,
        ctx: &mut PtContext,
        frames: &mut dyn FramePolicy,
        vma: &Vma,
        thp: Thp,
        stats: &mut FaultStats,
    ) -> Result<()> {
        let mut at = vma.start.0;
        while at < vma.end.0 {
            if let Some((_, size)) = self.truth(Vpn(at).addr()) {
                at = Vpn(at).align_down(size).0 + size.base_pages();
                continue;
            }
            // The run of unmapped pages from `at` (all of the VMA unless it was partly mapped
            // before eager paging saw it).
            let mut run_end = at + 1;
            while run_end < vma.end.0 && self.truth(Vpn(run_end).addr()).is_none() {
                run_end += 1;
            }
            while at < run_end {
                let want = (run_end - at).ilog2().min(physmem::MAX_ORDER);
                let (block, order) = frames
                    .block(ctx.buddy, self.pid, Vpn(at), want)
                    .ok_or_else(|| {
                        Error::OutOfMemory(format!(
                            "eager paging found no free frame for pid {} at {:?} ({} pages of \
                             its VMA left to back); the VMAs exceed os.physmem.bytes",
                            self.pid,
                            Vpn(at).addr(),
                            vma.end.0 - at
                        ))
                    })?;
                debug_assert!(order <= want, "a frame policy returned a larger block");
                let pages = 1u64 << order.min(want);
                self.install_run(ctx, vma, Vpn(at), block, pages, thp, stats)?;
                at += pages;
            }
        }
        Ok(())
    }

    /// Map the `pages` pages from `vpn` to consecutive frames from `first`, each with the
    /// largest page size that is aligned in both spaces, fits in the run and the VMA, and that
    /// the VMA's kind or THP allows.
    #[allow(clippy::too_many_arguments)]
    fn install_run(
        &mut self,
        ctx: &mut PtContext,
        vma: &Vma,
        vpn: Vpn,
        first: Pfn,
        pages: u64,
        thp: Thp,
        stats: &mut FaultStats,
    ) -> Result<()> {
        let mut sizes = Vec::with_capacity(3);
        if vma.kind == MapKind::Huge1G {
            sizes.push(PageSize::Size1G);
        }
        if thp != Thp::Never || vma.kind == MapKind::Huge1G {
            sizes.push(PageSize::Size2M);
        }
        let mut i = 0;
        while i < pages {
            let (v, f) = (vpn.0 + i, first.0 + i);
            let size = sizes
                .iter()
                .copied()
                .find(|s| {
                    let n = s.base_pages();
                    v % n == 0
                        && f % n == 0
                        && i + n <= pages
                        && self.huge_fits(vma, Vpn(v), *s)
                        && (*s != PageSize::Size2M
                            || vma.kind == MapKind::Huge1G
                            || thp.backs(vma, Vpn(v)))
                })
                .unwrap_or(PageSize::Size4K);
            self.install(ctx, Vpn(v), Pfn(f), size, stats)?;
            i += size.base_pages();
        }
        Ok(())
    }

    /// Map the `size` page at `base` to `pfn` in the page table and record it: ground truth,
    /// the small-page counts that keep huge pages out of regions holding small ones, and the
    /// reverse map of the 4 KiB pages compaction may migrate.
    fn install(
        &mut self,
        ctx: &mut PtContext,
        base: Vpn,
        pfn: Pfn,
        size: PageSize,
        stats: &mut FaultStats,
    ) -> Result<()> {
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
        match size {
            PageSize::Size4K => stats.mapped_4k += 1,
            PageSize::Size2M => stats.mapped_2m += 1,
            PageSize::Size1G => stats.mapped_1g += 1,
        }
        Ok(())
    }

    /// Compaction moved the frame `old` to `new`: if it held one of this process's pages,
    /// remap the page (the caller shoots down its TLB entries) and return it.
    pub(super) fn migrate(
        &mut self,
        ctx: &mut PtContext,
        old: Pfn,
        new: Pfn,
    ) -> Result<Option<Vpn>> {
        let Some(&vpn) = self.frames.get(&old.0) else {
            return Ok(None);
        };
        self.relocate(ctx, vpn, PageSize::Size4K, new)?;
        Ok(Some(vpn))
    }

    /// Move the `size` page at `vpn` to the frame `to` (the frame policy evicted it from its
    /// frame, which another page may hold now, or promoted it): remap it and record the move.
    /// Returns the frame it left.
    pub(super) fn relocate(
        &mut self,
        ctx: &mut PtContext,
        vpn: Vpn,
        size: PageSize,
        to: Pfn,
    ) -> Result<Pfn> {
        let key = vpn.0 >> size.order();
        let from = self.truth[size.index()].get(&key).copied().ok_or_else(|| {
            Error::Workload(format!(
                "pid {} has no {size} page at {:?} to move",
                self.pid,
                vpn.addr()
            ))
        })?;
        // The table may have lost the old mapping already, if the page that took the frame
        // is this process's and its entry replaced this one's.
        self.pt.unmap(ctx, vpn, size);
        self.pt.map(ctx, vpn, to, size)?;
        self.truth[size.index()].insert(key, to);
        if size == PageSize::Size4K {
            if self.frames.get(&from.0) == Some(&vpn) {
                self.frames.remove(&from.0);
            }
            self.frames.insert(to.0, vpn);
            ctx.buddy.mark_movable([to]);
        }
        Ok(from)
    }

    pub(super) fn munmap(
        &mut self,
        ctx: &mut PtContext,
        frames: &mut dyn FramePolicy,
        va: VirtAddr,
        bytes: u64,
    ) -> Result<Vec<(Vpn, PageSize)>> {
        let start = va.vpn();
        let end = Vpn(VirtAddr(va.0 + page_rounded(bytes)).vpn().0);
        if let Some(ds) = &self.segment {
            if ds.seg.base < end.addr().0 && start.addr().0 < ds.seg.limit {
                return Err(Error::Workload(format!(
                    "munmap of [{va:?}, +{bytes:#x}) reaches pid {}'s primary region, which a \
                     direct segment maps: unmapping it is not modelled",
                    self.pid
                )));
            }
        }
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
                frames.free(ctx.buddy, pfn, size);
                if size != PageSize::Size1G {
                    dec(&mut self.small_in_1g, base.0 >> 18);
                }
                if size == PageSize::Size4K {
                    dec(&mut self.small_in_2m, base.0 >> 9);
                }
                gone.push((base, size));
            }
            // Swapped pages in the range leave the backing store (nothing to shoot down).
            if !self.swapped[size.index()].is_empty() {
                let keys: Vec<u64> = self.swapped[size.index()]
                    .iter()
                    .copied()
                    .filter(|k| (lo..hi).contains(k))
                    .collect();
                for k in keys {
                    self.swapped[size.index()].remove(&k);
                    self.count_small(Vpn(k << size.order()), size, false);
                }
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
