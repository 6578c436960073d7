//! The VMM (host OS) below a guest OS: host physical memory with its own buddy allocator, the
//! nested page table mapping guest-physical to host-physical memory (Gandhi et al. §II-A,
//! Fig 2), the x86-64 I/O gap in guest-physical memory, and the VMM direct segment of VMM
//! Direct and Dual Direct modes (§III-A, §III-B).
//!
//! The VMM backs guest memory lazily, as KVM does: a guest frame gets a host page when the
//! guest first touches it. The guest OS zeroes every frame it allocates, so that first touch
//! is the allocation itself: the guest OS hands the VMM each block its buddy allocator gave
//! out ([`Vmm::back`]), and each host page the VMM maps on the way is one EPT violation, whose
//! cost the guest's fault pays.

use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::{BuddyAllocator, MAX_ORDER};
use crate::pt::direct::{DirectSegment, EscapeFilter, Segment};
use crate::pt::host::HostTable;
use crate::pt::radix::RadixPageTable;
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext};
use crate::rng::{self, Rng};
use serde::Serialize;

const GIB: u64 = 1 << 30;
/// Guest-physical memory below the I/O gap (x86-64 reserves 3-4 GiB for memory-mapped I/O).
const BELOW_GAP: u64 = 3 * GIB;
/// Where guest memory resumes above the gap.
const ABOVE_GAP: u64 = 4 * GIB;

/// What the VMM is asked to do (the scheme's `[schemes.virt]` section builds it).
#[derive(Clone, Debug)]
pub struct VmmConfig {
    /// Bytes of host physical memory.
    pub host_bytes: u64,
    /// The page size the VMM backs guest memory with (falling back to smaller pages where host
    /// memory has no free block of it).
    pub host_page: PageSize,
    /// FMFI (at order 9) of host memory after boot-time fragmentation injection.
    pub host_fragmentation: f64,
    /// Cycles one EPT violation costs the guest (VM exit, host fault, VM entry).
    pub ept_fault_cycles: u64,
    /// Guest-physical memory has the x86-64 I/O gap at 3-4 GiB.
    pub io_gap: bool,
    /// Self-ballooning's I/O-gap relocation (§IV): the guest keeps 256 MiB below the gap for
    /// its kernel and gets the rest above 4 GiB, so one segment can map all of it.
    pub relocate_io_gap: bool,
    /// Create a VMM segment over guest memory above the gap (VMM Direct, Dual Direct).
    pub segment: bool,
    /// Guest-physical memory past the guest's own, ballooned out at boot, that the VMM can
    /// hot-plug for self-ballooning (§IV, §VI-C).
    pub balloon_reserve_bytes: u64,
    /// Host pages inside the VMM segment with a hard fault (§V, §IX-C), at random places: their
    /// guest pages escape the segment and the nested table maps them to other host frames.
    pub bad_pages: u32,
    /// The escape filter's bits and H3 hashes.
    pub filter_bits: u32,
    pub filter_hashes: u32,
    /// Shadow paging: the VMM keeps a shadow table (gVA → hPA) per guest process, which the
    /// hardware walks in one dimension, and traps every write to a guest page table.
    pub shadow: bool,
    /// Cycles of one such trap: the VM exit, the shadow update, the entry.
    pub shadow_exit_cycles: u64,
}

/// Where guest-physical memory is: its frames, and the holes in them no guest page may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestLayout {
    /// Frames the guest's allocator spans (memory and holes).
    pub frames: u64,
    /// `(first frame, frames)` of each hole: the I/O gap, and with relocation everything below
    /// it (the guest kernel's 256 MiB is not the workload's to allocate).
    pub holes: Vec<(u64, u64)>,
    /// The contiguous guest-physical range above the gap (all of memory without a gap).
    pub main: (u64, u64),
    /// The balloon reserve after it: `(first frame, frames)`, a hole until hot-plugged.
    pub reserve: (u64, u64),
}

impl GuestLayout {
    /// The layout of `bytes` of guest memory, followed by a balloon reserve of `reserve`
    /// bytes.
    pub fn of(bytes: u64, io_gap: bool, relocate: bool, reserve: u64) -> GuestLayout {
        let f = |b: u64| b / 4096;
        let (holes, main) = if !io_gap || (bytes <= BELOW_GAP && !relocate) {
            (Vec::new(), (0, f(bytes)))
        } else if relocate {
            let kernel = 256 << 20;
            let above = bytes.saturating_sub(kernel);
            (vec![(0, f(ABOVE_GAP))], (f(ABOVE_GAP), f(above)))
        } else {
            let above = bytes - BELOW_GAP;
            (
                vec![(f(BELOW_GAP), f(ABOVE_GAP - BELOW_GAP))],
                (f(ABOVE_GAP), f(above)),
            )
        };
        let end = main.0 + main.1;
        let mut holes = holes;
        if reserve > 0 {
            holes.push((end, f(reserve)));
        }
        GuestLayout {
            frames: end + f(reserve),
            holes,
            main,
            reserve: (end, f(reserve)),
        }
    }

    /// Take the holes out of a guest allocator spanning [`GuestLayout::frames`].
    pub fn reserve_holes(&self, buddy: &mut BuddyAllocator) -> Result<()> {
        for &(start, frames) in &self.holes {
            if !buddy.alloc_range(start, frames) {
                return Err(Error::config(
                    "os.physmem.bytes",
                    "the guest's I/O gap could not be reserved",
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct VmmStats {
    /// EPT violations: host pages mapped on the guest's first touch.
    pub ept_faults: u64,
    pub ept_fault_cycles: u64,
    /// Host pages backing guest memory, by size.
    pub backed: [u64; 3],
    /// Host pages backed smaller than `host_page` because host memory had no free block.
    pub fallbacks: u64,
    /// Guest frames hot-plugged from the balloon reserve (self-ballooning).
    pub hotplugged: u64,
    /// Shadow paging: traps of guest page-table writes, and their cycles.
    pub shadow_exits: u64,
    pub shadow_exit_cycles: u64,
}

/// The `os.vmm` stats subtree.
#[derive(Clone, Debug, Serialize)]
pub struct VmmSnapshot {
    pub ept_faults: u64,
    pub ept_fault_cycles: u64,
    pub backed_4k: u64,
    pub backed_2m: u64,
    pub backed_1g: u64,
    pub fallbacks: u64,
    pub hotplugged_frames: u64,
    /// Shadow paging: guest page-table writes trapped, their cycles, the shadow tables' bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowSnapshot>,
    /// Bytes of the nested page table.
    pub npt_bytes: u64,
    pub host_free_frames: u64,
    /// The VMM segment, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<Segment>,
    /// Guest pages escaping the VMM segment (bad host pages).
    pub escaped_pages: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ShadowSnapshot {
    pub exits: u64,
    pub exit_cycles: u64,
    pub table_bytes: u64,
}

pub struct Vmm {
    cfg: VmmConfig,
    layout: GuestLayout,
    buddy: BuddyAllocator,
    host: HostTable,
    pub stats: VmmStats,
}

impl Vmm {
    /// Boot the host: its memory, fragmented as configured, the nested table's root, and the
    /// VMM segment over the guest's main range if one is asked for (its host memory is
    /// reserved now, contiguous, as the VMM of §VI-A does right after start-up).
    pub fn new(cfg: &VmmConfig, guest_bytes: u64, seed: u64) -> Result<Vmm> {
        let layout = GuestLayout::of(
            guest_bytes,
            cfg.io_gap,
            cfg.relocate_io_gap,
            cfg.balloon_reserve_bytes,
        );
        let mut buddy = BuddyAllocator::new(cfg.host_bytes / 4096);
        let segment = if cfg.segment {
            // Guest memory above the gap and the balloon reserve after it: one range.
            let (start, frames) = (layout.main.0, layout.main.1 + layout.reserve.1);
            let to = (0..buddy.total_frames() / (1 << MAX_ORDER))
                .map(|g| g << MAX_ORDER)
                .find(|&at| buddy.alloc_range(at, frames))
                .ok_or_else(|| {
                    Error::config(
                        "schemes.virt.host_bytes",
                        format!(
                            "no contiguous {} MiB of host memory for the VMM segment",
                            frames >> 8
                        ),
                    )
                })?;
            let mut rng = Rng::new(seed, rng::stream::PLACEMENT);
            let filter = EscapeFilter::new(cfg.filter_bits, cfg.filter_hashes, &mut rng);
            let mut ds =
                DirectSegment::new(Segment::new(start << 12, frames << 12, to << 12), filter);
            while ds.escaped_pages() < (cfg.bad_pages as usize).min(frames as usize) {
                ds.escape((start + rng.below(frames)) << 12);
            }
            Some(ds)
        } else {
            None
        };
        let mut rng = Rng::new(seed, rng::stream::HOST_FRAGMENTATION);
        buddy.fragment(cfg.host_fragmentation, 9, &mut rng);
        let mut store = PtStore::new();
        let table = RadixPageTable::new(
            &mut PtContext {
                store: &mut store,
                buddy: &mut buddy,
            },
            4,
        )?;
        Ok(Vmm {
            cfg: cfg.clone(),
            layout,
            buddy,
            host: HostTable {
                table,
                store,
                segment,
                shadows: Vec::new(),
            },
            stats: VmmStats::default(),
        })
    }

    /// Guest-physical memory as the guest sees it.
    pub fn layout(&self) -> &GuestLayout {
        &self.layout
    }

    /// Self-ballooning's hot-plug: hand the guest the next `frames` frames of its balloon
    /// reserve, contiguous, if the reserve has them left (§IV: "the VMM uses memory hotplug
    /// to add the same amount of memory back"). Returns their first frame; the guest frees
    /// them into its allocator.
    pub fn hotplug(&mut self, frames: u64) -> Option<Pfn> {
        let (start, left) = self.layout.reserve;
        if frames > left {
            return None;
        }
        self.layout.reserve = (start + frames, left - frames);
        self.stats.hotplugged += frames;
        Some(Pfn(start))
    }

    /// What the MMU reads.
    pub fn host(&self) -> &HostTable {
        &self.host
    }

    /// Back the guest block of `2^order` frames at `gpfn` with host memory where it has none;
    /// returns the cycles of the EPT violations that took.
    pub fn back(&mut self, gpfn: Pfn, order: u32) -> Result<u64> {
        let end = gpfn.0 + (1 << order);
        let mut at = gpfn.0;
        let mut cycles = 0;
        while at < end {
            let gpa = Pfn(at).addr();
            if let Some((_, size)) = self.host.lookup(gpa) {
                at = (at & !(size.base_pages() - 1)) + size.base_pages();
                continue;
            }
            let size = self.map_host_page(at)?;
            self.stats.ept_faults += 1;
            self.stats.backed[size.index()] += 1;
            cycles += self.cfg.ept_fault_cycles;
            at = (at & !(size.base_pages() - 1)) + size.base_pages();
        }
        self.stats.ept_fault_cycles += cycles;
        Ok(cycles)
    }

    /// Map the host page holding guest frame `gfn`: `host_page` where the guest range it
    /// covers is unmapped and the host has a block for it (inside the VMM segment, the
    /// segment's own frames), else smaller. Returns the size mapped.
    fn map_host_page(&mut self, gfn: u64) -> Result<PageSize> {
        let want = self.cfg.host_page;
        for size in PageSize::ALL.into_iter().rev().filter(|&s| s <= want) {
            let base = gfn & !(size.base_pages() - 1);
            if !self.range_unmapped(base, size) {
                continue;
            }
            let (first, last) = (base << 12, ((base + size.base_pages()) << 12) - 1);
            let frame = match &self.host.segment {
                // An escaped page is mapped elsewhere, by itself.
                Some(ds) if ds.escapes(first) && size == PageSize::Size4K => self.buddy.alloc(0),
                Some(ds)
                    if ds.seg.contains(first)
                        && ds.seg.contains(last)
                        && !ds.escapes_any(first, last) =>
                {
                    Some(Pfn(ds.seg.apply(first) >> 12))
                }
                // Straddling the segment's edge or holding an escaped page: a smaller page
                // fits.
                Some(ds) if ds.seg.contains(first) || ds.seg.contains(last) => None,
                _ => self.buddy.alloc(size.order()),
            };
            let Some(hpfn) = frame else {
                continue;
            };
            if size < want {
                self.stats.fallbacks += 1;
            }
            let mut ctx = PtContext {
                store: &mut self.host.store,
                buddy: &mut self.buddy,
            };
            self.host.table.map(&mut ctx, Vpn(base), hpfn, size)?;
            return Ok(size);
        }
        Err(Error::OutOfMemory(format!(
            "the VMM has no host frame for guest frame {gfn:#x} (raise schemes.virt.host_bytes)"
        )))
    }

    /// Whether no guest frame of the `size` page at `base` is backed yet (a bigger host page
    /// cannot cover frames already mapped by smaller ones).
    fn range_unmapped(&self, base: u64, size: PageSize) -> bool {
        !self
            .host
            .table
            .covers(&self.host.store, VirtAddr(base << 12), size)
    }

    pub fn reset_stats(&mut self) {
        self.stats = VmmStats::default();
    }

    pub fn snapshot(&self) -> VmmSnapshot {
        VmmSnapshot {
            ept_faults: self.stats.ept_faults,
            ept_fault_cycles: self.stats.ept_fault_cycles,
            backed_4k: self.stats.backed[0],
            backed_2m: self.stats.backed[1],
            backed_1g: self.stats.backed[2],
            fallbacks: self.stats.fallbacks,
            hotplugged_frames: self.stats.hotplugged,
            shadow: self.cfg.shadow.then(|| ShadowSnapshot {
                exits: self.stats.shadow_exits,
                exit_cycles: self.stats.shadow_exit_cycles,
                table_bytes: self.host.shadows.iter().map(|t| t.bytes()).sum(),
            }),
            npt_bytes: self.host.table.bytes(),
            host_free_frames: self.buddy.free_frames(),
            segment: self.host.segment.as_ref().map(|d| d.seg),
            escaped_pages: self
                .host
                .segment
                .as_ref()
                .map_or(0, |d| d.escaped_pages() as u64),
        }
    }

    /// Shadow paging: process `pid` started; its shadow table is made.
    pub fn shadow_spawn(&mut self, pid: u16) -> Result<()> {
        if !self.cfg.shadow {
            return Ok(());
        }
        let mut ctx = PtContext {
            store: &mut self.host.store,
            buddy: &mut self.buddy,
        };
        let table = RadixPageTable::new(&mut ctx, 4)?;
        // Pids are handed out in order, so the table's index is its pid.
        debug_assert_eq!(self.host.shadows.len(), pid as usize);
        self.host.shadows.push(table);
        Ok(())
    }

    /// Shadow paging: the guest wrote `writes` entries of `pid`'s page table to map the
    /// `gsize` page at `vpn` to guest frame `gpfn`. Each write traps to the VMM, which
    /// mirrors the mapping in the shadow table at host frames (pieces of the smaller of the
    /// guest's and the host's page). Returns the traps' cycles.
    pub fn shadow_map(
        &mut self,
        pid: u16,
        vpn: Vpn,
        (gpfn, gsize): (Pfn, PageSize),
        writes: u64,
    ) -> Result<u64> {
        if !self.cfg.shadow {
            return Ok(0);
        }
        let mut at = vpn.0;
        while at < vpn.0 + gsize.base_pages() {
            let va = Vpn(at).addr();
            let (hpfn, size) = self.compose(va, (gpfn, gsize)).ok_or_else(|| {
                Error::Verify(format!("shadow paging: guest frame of {va:?} not backed"))
            })?;
            let mut ctx = PtContext {
                store: &mut self.host.store,
                buddy: &mut self.buddy,
            };
            self.host.shadows[pid as usize].map(&mut ctx, Vpn(at), hpfn, size)?;
            at += size.base_pages();
        }
        let cycles = writes * self.cfg.shadow_exit_cycles;
        self.stats.shadow_exits += writes;
        self.stats.shadow_exit_cycles += cycles;
        Ok(cycles)
    }

    /// Shadow paging: the guest unmapped the `gsize` page at `vpn` (one trapped write).
    pub fn shadow_unmap(&mut self, pid: u16, vpn: Vpn, gsize: PageSize) {
        if !self.cfg.shadow {
            return;
        }
        let mut at = vpn.0;
        while at < vpn.0 + gsize.base_pages() {
            let Some((_, size)) =
                self.host.shadows[pid as usize].lookup(&self.host.store, Vpn(at).addr())
            else {
                at += 1;
                continue;
            };
            let mut ctx = PtContext {
                store: &mut self.host.store,
                buddy: &mut self.buddy,
            };
            self.host.shadows[pid as usize].unmap(&mut ctx, Vpn(at), size);
            at += size.base_pages();
        }
        self.stats.shadow_exits += 1;
        self.stats.shadow_exit_cycles += self.cfg.shadow_exit_cycles;
    }

    /// Fault injection (`sim.verify_inject_after`): corrupt the shadow entry of `va`, the one
    /// the hardware reads. Returns the size of the shadow page, if there is one.
    pub fn corrupt_shadow(&mut self, pid: u16, va: VirtAddr) -> Option<PageSize> {
        let table = self.host.shadows.get(pid as usize)?;
        let (_, size) = table.lookup(&self.host.store, va)?;
        table.corrupt(&mut self.host.store, va.vpn().align_down(size), size);
        Some(size)
    }

    pub fn shadows(&self) -> bool {
        self.cfg.shadow
    }

    /// The guest-virtual page at `va` mapped to guest frame `gpfn` as a `gsize` page: the
    /// host-physical mapping the hardware must produce.
    pub fn compose(&self, va: VirtAddr, (gpfn, gsize): (Pfn, PageSize)) -> Option<(Pfn, PageSize)> {
        let gpa = crate::addr::translate(va, gpfn, gsize);
        let host = self.host.lookup(gpa)?;
        Some(crate::pt::host::compose(va, (gpfn, gsize), host))
    }
}
