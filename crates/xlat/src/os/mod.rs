//! The modelled operating system: processes with VMAs, demand paging, THP and explicit 1 GiB
//! pages, physical memory from a fragmented buddy allocator, and the ground-truth mapping of
//! every process against which `verify` checks each translation.

mod frames;
pub mod layout;
mod process;
mod swap;
mod vma;
pub mod vmm;

pub use crate::mem::physmem::FrameOrder;
pub use frames::{BuddyFrames, Eviction, FramePolicy, PageOut};
pub use layout::LayoutKind;
pub use process::Process;
use process::{Paging, Thp};
use swap::{LruQueue, Victim};
pub use swap::{SwapConfig, SwapPolicy, SwapStats};
pub use vma::{per_mille, MapKind, Region, Vma};

use crate::addr::{PageSize, Pfn, VirtAddr, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::{self, BuddyAllocator, PhysMemConfig};
use crate::pt::direct::{DirectSegment, EscapeFilter, Segment};
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext, TableScan};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

/// Host bytes the engine may keep per 4 KiB frame of simulated memory, however little of it
/// is mapped: the table store's direct index and the buddy allocator's frame state. Measured
/// against it: 1 TiB of memory at FMFI 0.95 takes 1.2 GiB, 4.7 bytes a frame.
pub const HOST_BYTES_PER_FRAME: u64 =
    PtStore::INDEX_BYTES_PER_FRAME + BuddyAllocator::HOST_BYTES_PER_FRAME;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsConfig {
    /// Cycles the core loses to one page fault (trap, allocation, zeroing, PTE update).
    pub minor_fault_cycles: u64,
    /// How a first touch is charged: `trap` (default), a precise exception (the handler runs
    /// once older instructions retire, younger ones refetch, the walk is made again); or
    /// `walk_penalty`, ChampSim's model (`src/ptw.cc`, `src/vmem.cc`): the walk that finds
    /// the page unmapped takes the fault's cycles as extra latency and returns the new
    /// mapping, with no drain, refetch or second walk.
    #[serde(default, skip_serializing_if = "FaultModel::is_trap")]
    pub fault_model: FaultModel,
    /// Cycles added to a fault for each page-table page its mapping creates (ChampSim charges
    /// its minor-fault penalty for each new page-table page as well as for the data page);
    /// pages as the table counts them (`PageTable::table_pages`). 0 by default.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pt_page_fault_cycles: u64,
    /// Transparent huge pages: `never`, or `always` (map 2 MiB on fault when possible).
    pub thp: ThpPolicy,
    /// Fraction (0..=1) of every anonymous region's 2 MiB ranges that THP does not back, as
    /// a real system leaves heap grown in small steps, unaligned ranges and `MADV_NOHUGEPAGE`
    /// to 4 KiB pages: a fixed hash of the range's number picks them, the same for every run.
    /// A workload's own share (the graph kernels' `thp_ineligible`) applies where larger.
    #[serde(default, skip_serializing_if = "is_zero_fraction")]
    pub thp_ineligible: f64,
    /// Back every anonymous region of 2 MiB or more with explicit 1 GiB pages (falling back to
    /// 2 MiB, then 4 KiB, where a 1 GiB page does not fit or no free 1 GiB block exists), as a
    /// big-memory program that asks hugetlbfs for its heap does (Gandhi et al. §VIII run their
    /// workloads this way). Lets any workload run on 1 GiB pages, not only those with a
    /// `hugetlb_1g` knob of their own.
    #[serde(default)]
    pub hugetlb_1g: bool,
    /// Eager paging (RMM, Karakostas et al. ISCA'15): the first fault in a VMA backs the
    /// whole VMA at once, in the largest free blocks of physical memory, so consecutive pages
    /// get consecutive frames. Pages are still mapped in the page table (4 KiB, or 2 MiB /
    /// 1 GiB where THP or the VMA's kind allows); the fault costs the core one minor fault.
    #[serde(default)]
    pub eager_paging: bool,
    pub physmem: PhysMemConfig,
    /// Cycles a TLB shootdown costs beyond the local invalidation when other cores run the
    /// process: the initiator waits for their acknowledgements and each of them runs the
    /// IPI handler (multi-core systems only).
    #[serde(default = "default_ipi_cycles")]
    pub shootdown_ipi_cycles: u64,
    /// Swapping to a backing store (`[os.swap]`; off by default).
    #[serde(default)]
    pub swap: SwapConfig,
    /// Direct segments for primary regions (`[os.direct_segment]`; off by default).
    #[serde(default, skip_serializing_if = "DirectSegmentConfig::is_off")]
    pub direct_segment: DirectSegmentConfig,
    /// Where a process's regions go (`os::layout`): `linux` (default), x86-64 Linux's layout
    /// (binary and brk heap, shared libraries and mappings top-down below `mmap_base`, stacks
    /// at the top); `packed`, every region upward from 16 TiB with 2 MiB gaps.
    #[serde(default)]
    pub layout: LayoutKind,
    /// Address-space layout randomisation under the `linux` layout (on by default, as on
    /// Linux): the binary's base, the stack's top, `mmap_base` and the brk start are drawn from
    /// the run's seed and the pid, so the same seed gives the same layout. Off: Linux's fixed
    /// addresses (`setarch -R`).
    #[serde(default = "default_aslr")]
    pub aslr: bool,
}

fn default_aslr() -> bool {
    true
}

/// `[os.direct_segment]`: the OS support of direct segments (Basu et al. ISCA'13; Gandhi et
/// al. §II-B, §III-A, §VI-A). A process's *primary region* (its first anonymous mapping of at
/// least `min_bytes`) gets contiguous physical memory, reserved when it is mapped, and a
/// segment mapping it: the segment registers `BASE_G`, `LIMIT_G`, `OFFSET_G` of its context.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DirectSegmentConfig {
    pub enabled: bool,
    /// The smallest anonymous mapping that becomes a primary region.
    pub min_bytes: u64,
    /// Physical pages with hard faults inside each segment (§V), placed at random: their
    /// pages escape the segment through its escape filter and are mapped by paging.
    pub bad_pages: u32,
    /// Bits and H3 hashes of the escape filter (§IX-C: 256 bits, 4 hashes).
    pub filter_bits: u32,
    pub filter_hashes: u32,
    /// Self-ballooning (§IV): when guest-physical memory is too fragmented for a segment, the
    /// guest's balloon takes that many scattered free frames and the VMM hot-plugs as many
    /// contiguous ones from the guest's reserve (`schemes.virt.balloon_reserve_bytes`), where
    /// the segment is created. Needs a VMM with a reserve.
    pub self_balloon: bool,
    /// Cycles the balloon driver and the hot-plug take per 4 KiB page moved (an estimate).
    pub balloon_cycles_per_page: u64,
}

impl Default for DirectSegmentConfig {
    fn default() -> Self {
        DirectSegmentConfig {
            enabled: false,
            min_bytes: 16 << 20,
            bad_pages: 0,
            filter_bits: 256,
            filter_hashes: 4,
            self_balloon: false,
            balloon_cycles_per_page: 1000,
        }
    }
}

impl DirectSegmentConfig {
    fn is_off(&self) -> bool {
        !self.enabled
    }

    fn validate(&self, path: &str) -> Result<()> {
        crate::pt::direct::check_escapes(
            (&format!("{path}.filter_bits"), self.filter_bits),
            (&format!("{path}.filter_hashes"), self.filter_hashes),
            (&format!("{path}.bad_pages"), self.bad_pages),
        )
    }
}

/// An estimate, not a measurement: an IPI-based shootdown that reaches other cores costs on
/// the order of microseconds on x86 Linux; 4000 cycles is ~1.5 us at 2.6 GHz. Tune it.
fn default_ipi_cycles() -> u64 {
    4000
}

/// `os.fault_model`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultModel {
    #[default]
    Trap,
    WalkPenalty,
}

impl FaultModel {
    fn is_trap(&self) -> bool {
        *self == FaultModel::Trap
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpPolicy {
    Never,
    Always,
}

impl OsConfig {
    /// The frame state of physical memory, kept `copies` times (twice on a VMM that backs
    /// each frame of its guest with one of its own).
    pub fn host_uses(
        &self,
        path: &str,
        copies: (u64, &'static str),
        uses: &mut crate::config::HostUses,
    ) {
        let key = format!("{path}.physmem.bytes");
        let frames = self.physmem.frames();
        uses.add(key, frames, "4 KiB frames", HOST_BYTES_PER_FRAME, copies);
        // `lru`: an access time per frame of memory; `horizon`: an access time and an owner
        // per frame of the pool (counted as if it were all of memory).
        let per_frame = match self.swap.policy {
            _ if !self.swap.enabled => 0,
            SwapPolicy::Fifo => 0,
            SwapPolicy::Lru => 8,
            SwapPolicy::Horizon => 16,
        };
        if per_frame > 0 {
            let key = format!("{path}.swap.policy");
            uses.add(key, frames, "4 KiB frames", per_frame, copies);
        }
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        crate::config::fraction(
            format!("{path}.thp_ineligible"),
            "each region's 2 MiB ranges",
            self.thp_ineligible,
        )?;
        self.physmem.validate(&format!("{path}.physmem"))?;
        self.swap.validate(&format!("{path}.swap"))?;
        self.direct_segment
            .validate(&format!("{path}.direct_segment"))?;
        if self.swap.enabled && self.direct_segment.enabled {
            return Err(Error::config(
                format!("{path}.swap.enabled"),
                "swapping is not modelled with direct segments (a segment's memory stays put)",
            ));
        }
        if self.swap.enabled && self.eager_paging {
            return Err(Error::config(
                format!("{path}.swap.enabled"),
                format!(
                    "swapping is not modelled with eager paging ({path}.eager_paging = true): \
                     eager paging backs a whole VMA at its first fault, swapped pages included"
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FaultStats {
    /// Page faults handled that found the page nowhere (every first touch of a page).
    pub minor: u64,
    /// Page faults that read the page back from the backing store (swapping).
    #[serde(skip_serializing_if = "is_zero")]
    pub major: u64,
    /// Pages mapped by size.
    #[serde(rename = "4k")]
    pub mapped_4k: u64,
    #[serde(rename = "2m")]
    pub mapped_2m: u64,
    #[serde(rename = "1g")]
    pub mapped_1g: u64,
    /// THP faults that fell back to 4 KiB (no aligned range or no free order-9 block).
    pub thp_fallbacks: u64,
    /// 1 GiB requests that fell back to smaller pages (no free order-18 block).
    pub huge_1g_fallbacks: u64,
    /// Cycles charged for faults (the minor-fault cost plus page-table allocation and
    /// rehashing, and with swapping the page-outs and page-ins).
    pub cycles: u64,
    /// Cycles the page tables spent allocating contiguous memory (hashed tables, §III of
    /// ME-HPT), at faults and at pre-population; the faults' share is part of `cycles`.
    pub pt_alloc_cycles: u64,
    /// Cycles the page tables spent moving entries (hashed tables: rehashes of resizing
    /// ways, cuckoo re-insertions), at faults and at pre-population; the faults' share is
    /// part of `cycles`.
    pub pt_rehash_cycles: u64,
    /// Pages mapped by pre-population at setup (not faults, not charged).
    pub populated: u64,
    /// 4 KiB pages compaction migrated to make room for contiguous page-table blocks (each
    /// remapped and shot down).
    pub migrated: u64,
    /// Pages the frame policy evicted to make room for a faulting page (Utopia's RestSeg
    /// conflicts), each moved to a new frame, copied and shot down.
    #[serde(skip_serializing_if = "is_zero")]
    pub evicted: u64,
    /// Cycles the faulting cores waited for those copies, which ran through the memory
    /// hierarchy (part of `cycles`).
    #[serde(skip_serializing_if = "is_zero")]
    pub copy_cycles: u64,
    /// Page-table pages the faults' mappings created, and the cycles charged for them
    /// (`os.pt_page_fault_cycles` each; part of `cycles`). Counted only when that is set.
    #[serde(skip_serializing_if = "is_zero")]
    pub pt_pages: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pt_page_cycles: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_fraction(x: &f64) -> bool {
    *x == 0.0
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct OsStats {
    pub faults: FaultStats,
    pub munmaps: u64,
    /// Pages moved into the frame policy's own memory because their walks cost too much
    /// (Utopia's PTE-based migration), each remapped, copied and shot down.
    pub promoted: u64,
    pub swap: SwapStats,
    /// Aging passes over the page tables' migration counters (Utopia's decay).
    pub aging: AgingStats,
}

/// The OS's aging passes over the migration counters in the PTEs (Utopia's
/// `schemes.utopia.decay_interval`): each reads a window of a process's page table and
/// writes back the lines whose counters it halved, through the memory hierarchy of the core whose
/// walk triggered it, which waits for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgingStats {
    pub passes: u64,
    /// Entries whose counters a pass halved.
    pub entries: u64,
    pub lines_read: u64,
    pub lines_written: u64,
    /// Cycles the cores waited for the passes' reads and writes.
    pub cycles: u64,
}

impl AgingStats {
    pub fn is_zero(&self) -> bool {
        *self == AgingStats::default()
    }
}

/// Direct segments the OS made (`os.direct_segment`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SegmentOsStats {
    /// Primary regions that got a segment.
    pub created: u64,
    /// Primary regions left paged: no contiguous memory, even after self-ballooning.
    pub failed: u64,
    /// Later large mappings of a primary region the segment could not grow over (the frames
    /// after its memory were taken): they are paged.
    pub not_extended: u64,
    /// Bytes the segments map.
    pub bytes: u64,
    /// Frames self-ballooning took from the guest (and hot-plugged back contiguous).
    pub ballooned_frames: u64,
    /// What it cost (`balloon_cycles_per_page` each): work of the guest and VMM, not charged
    /// to a core.
    pub balloon_cycles: u64,
}

/// Builds the page table of a new process (`pid`): the scheme's organisation.
pub type TableFactory<T> = Box<dyn FnMut(&mut PtContext, u16) -> Result<T> + Send>;

/// The OS: owns physical memory, the page-table store and all processes, whose page tables
/// are of the scheme's organisation `T`.
pub struct Os<T: PageTable> {
    cfg: OsConfig,
    new_table: TableFactory<T>,
    frames: Box<dyn FramePolicy>,
    pub buddy: BuddyAllocator,
    pub store: PtStore,
    processes: Vec<Process<T>>,
    pub stats: OsStats,
    /// Frames pinned by fragmentation injection ("other programs"), never freed.
    pinned: Vec<Pfn>,
    fmfi_initial: f64,
    /// Pages whose mapping changed under the MMU (compaction, evictions), for it to shoot
    /// down.
    shootdowns: Vec<(u16, Vpn, PageSize)>,
    /// Pages whose contents moved (evictions), for the memory hierarchy to copy.
    copies: Vec<PageCopy>,
    /// The page-table scans of aging passes, for the memory hierarchy to run.
    scan: TableScan,
    /// Swapping: resident pages in the order they were mapped to frames of the buddy
    /// allocator (the reclaim's FIFO; entries whose page has gone since are skipped).
    resident: std::collections::VecDeque<(u16, Vpn, PageSize)>,
    /// Swapping by `lru` or `horizon`: every reference stamps its page with this clock (the
    /// references so far).
    tracks_access: bool,
    access_clock: u64,
    /// `lru`: the last access time of the page whose first frame is each physical frame, and
    /// the queue reclaim takes the least recently used page from.
    stamps: Vec<u64>,
    lru: LruQueue,
    /// Swap I/O cycles since the last fault charged them.
    swap_cycles: u64,
    /// The VMM this OS runs on as a guest, if it is virtualized: its physical memory is then
    /// guest-physical, and the VMM backs every block its allocator hands out.
    vmm: Option<vmm::Vmm>,
    seed: u64,
    /// What the OS did for direct segments since boot (set up before any measurement, so
    /// never reset).
    segments: SegmentOsStats,
}

/// A page's contents copied from one frame to another: the memory traffic of a migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCopy {
    pub from: Pfn,
    pub to: Pfn,
    pub size: PageSize,
}

impl<T: PageTable> Os<T> {
    /// Boot: build physical memory and fragment it to the configured FMFI. Every process gets
    /// a page table from `new_table`; frames for its pages come from `frames`. On a VMM
    /// (`vmm`), physical memory is the guest-physical memory the VMM lays out, I/O gap
    /// included, and what boot allocates (fragmentation's pins) is backed by the host.
    pub fn new(
        cfg: &OsConfig,
        seed: u64,
        new_table: TableFactory<T>,
        mut frames: Box<dyn FramePolicy>,
        vmm: Option<vmm::Vmm>,
    ) -> Result<Os<T>> {
        let mut buddy = match &vmm {
            Some(v) => {
                let mut b = BuddyAllocator::new(v.layout().frames);
                v.layout().reserve_holes(&mut b)?;
                b.keep_journal();
                b
            }
            None => BuddyAllocator::new(cfg.physmem.bytes / 4096),
        };
        frames.reserve(&mut buddy)?;
        let mut rng = Rng::new(seed, rng::stream::FRAGMENTATION);
        // The contiguous region is taken before fragmentation and given back after it, so no
        // pin lands in it.
        let kept = keep_contiguous(&mut buddy, cfg.physmem.contiguous_bytes / 4096);
        // Kept for a moment only: no guest touches them, so the VMM backs none of them.
        buddy.take_journal();
        let pinned = buddy.fragment(
            cfg.physmem.fragmentation,
            cfg.physmem.fragmentation_order,
            &mut rng,
        );
        for (pfn, order) in kept {
            buddy.free(pfn, order);
        }
        // The pins stand for other programs' movable pages: contiguous page-table allocations
        // may migrate them (`physmem::compaction`).
        buddy.mark_movable(pinned.iter().copied());
        buddy.set_compaction(Some(physmem::CompactionPolicy {
            max_fmfi: cfg.physmem.compaction_max_fmfi,
            fmfi_order: cfg.physmem.fragmentation_order,
        }));
        let fmfi_initial = buddy.fmfi(cfg.physmem.fragmentation_order);
        if cfg.physmem.frame_order == physmem::FrameOrder::Shuffled {
            buddy.shuffle_frames(Rng::new(seed, rng::stream::FRAME_ORDER));
        }
        let policy = cfg.swap.enabled.then_some(cfg.swap.policy);
        if policy == Some(SwapPolicy::Horizon) && !frames.enable_horizon() {
            return Err(Error::config(
                "os.swap.policy",
                "\"horizon\" is Horizon LRU over Mosaic's iceberg pool: this scheme's frames \
                 come from another allocator (use \"lru\" or \"fifo\")",
            ));
        }
        if policy == Some(SwapPolicy::Lru) && vmm.is_some() {
            return Err(Error::config(
                "os.swap.policy",
                "\"lru\" is not modelled on a VMM: the hardware reports host frames, the \
                 guest's reclaim sees guest frames",
            ));
        }
        let stamps = match policy {
            Some(SwapPolicy::Lru) => vec![0; buddy.total_frames() as usize],
            _ => Vec::new(),
        };
        let mut os = Os {
            cfg: cfg.clone(),
            new_table,
            frames,
            buddy,
            store: PtStore::new(),
            processes: Vec::new(),
            stats: OsStats::default(),
            pinned,
            fmfi_initial,
            shootdowns: Vec::new(),
            copies: Vec::new(),
            scan: TableScan::default(),
            resident: std::collections::VecDeque::new(),
            tracks_access: policy.is_some_and(|p| p.tracks_access()),
            access_clock: 0,
            stamps,
            lru: LruQueue::default(),
            swap_cycles: 0,
            vmm,
            seed,
            segments: SegmentOsStats::default(),
        };
        os.back_allocations()?;
        if let Some(v) = &mut os.vmm {
            v.reset_stats();
        }
        Ok(os)
    }

    /// On a VMM: have it back the blocks the allocator handed out since the last call (the
    /// guest zeroes each, its first touch); returns the EPT violations' cycles.
    fn back_allocations(&mut self) -> Result<u64> {
        let Some(vmm) = &mut self.vmm else {
            return Ok(0);
        };
        let mut cycles = 0;
        for (pfn, order) in self.buddy.take_journal() {
            cycles += vmm.back(pfn, order)?;
        }
        Ok(cycles)
    }

    /// An EPT violation: a walk touched guest-physical `gpa`, which the VMM has not backed
    /// (the guest allocates before it touches, so only a guest entry that names a frame the
    /// guest never allocated gets here: `sim.verify_inject_after`'s corruption). The VMM backs
    /// it; returns the cycles.
    pub fn ept_violation(&mut self, gpa: crate::addr::PhysAddr) -> Result<u64> {
        let vmm = self
            .vmm
            .as_mut()
            .ok_or_else(|| Error::Verify(format!("an EPT violation at {gpa:?} with no VMM")))?;
        vmm.back(gpa.pfn(), 0)
    }

    /// The VMM's mapping of guest-physical memory, when this OS is a guest.
    pub fn host(&self) -> Option<&crate::pt::host::HostTable> {
        self.vmm.as_ref().map(vmm::Vmm::host)
    }

    /// Start a process with an empty address space; returns its pid.
    pub fn spawn(&mut self) -> Result<u16> {
        let pid = u16::try_from(self.processes.len())
            .map_err(|_| Error::Workload("more than 65536 processes".into()))?;
        let mut ctx = PtContext {
            store: &mut self.store,
            buddy: &mut self.buddy,
        };
        let pt = (self.new_table)(&mut ctx, pid)?;
        let va57 = pt.va_bits() == 57;
        self.processes.push(Process::new(
            pid,
            pt,
            va57,
            self.cfg.layout,
            self.cfg.aslr,
            self.seed,
        ));
        self.back_allocations()?;
        if let Some(v) = &mut self.vmm {
            v.shadow_spawn(pid)?;
        }
        Ok(pid)
    }

    /// Number of processes spawned.
    pub fn processes(&self) -> usize {
        self.processes.len()
    }

    pub fn process(&self, pid: u16) -> Result<&Process<T>> {
        self.processes
            .get(pid as usize)
            .ok_or_else(|| Error::Workload(format!("no process with pid {pid}")))
    }

    fn process_mut(&mut self, pid: u16) -> Result<&mut Process<T>> {
        self.process_and_pt(pid).map(|(p, _, _)| p)
    }

    /// Reserve `bytes` of virtual address space (no physical memory until first touch). With
    /// `os.direct_segment`, a process's first anonymous mapping of at least `min_bytes` is its
    /// primary region: its physical memory is reserved now, contiguous, and a direct segment
    /// maps it.
    pub fn mmap(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<VirtAddr> {
        let kind = match kind {
            MapKind::Anon if self.cfg.hugetlb_1g && bytes >= PageSize::Size2M.bytes() => {
                MapKind::Huge1G
            }
            k => k,
        };
        let ds = &self.cfg.direct_segment;
        let primary = ds.enabled && bytes >= ds.min_bytes && kind != MapKind::Huge1G;
        if !primary {
            return self.process_mut(pid)?.mmap(bytes, kind);
        }
        let va = self.process_mut(pid)?.mmap_primary(bytes, kind)?;
        match self.process(pid)?.segment.as_ref().map(|d| d.seg) {
            None => self.create_segment(pid, va, bytes)?,
            Some(seg) if seg.limit == va.0 => self.extend_segment(pid, bytes)?,
            Some(_) => {}
        }
        Ok(va)
    }

    /// Grow `pid`'s segment over the `bytes` just mapped after it, if the physical frames
    /// right after its memory are free or self-ballooning can hot-plug them there; otherwise
    /// the new mapping is paged (`os.segments.not_extended`).
    fn extend_segment(&mut self, pid: u16, bytes: u64) -> Result<()> {
        let frames = crate::addr::page_rounded(bytes) >> 12;
        let seg = self.process(pid)?.segment.as_ref().map(|d| d.seg);
        let Some(seg) = seg else { return Ok(()) };
        let at = (seg.to + seg.bytes()) >> 12;
        self.back_allocations()?;
        let mut got = self.buddy.alloc_range(at, frames);
        if !got && self.cfg.direct_segment.self_balloon {
            let hot = self.self_balloon_at(at, frames);
            got = hot && self.buddy.alloc_range(at, frames);
        }
        if !got {
            self.segments.not_extended += 1;
            return Ok(());
        }
        if let Some(ds) = self.process_mut(pid)?.segment.as_mut() {
            ds.extend(frames << 12);
        }
        self.segments.bytes += frames << 12;
        self.back_allocations()?;
        Ok(())
    }

    /// Give `pid`'s primary region `[va, va + bytes)` a direct segment: contiguous physical
    /// memory (2 MiB-aligned, so that the segment's pages align on both sides), found free or,
    /// with self-ballooning, made by it. If neither works the region stays paged, and the
    /// failure is counted.
    fn create_segment(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<()> {
        let cfg = self.cfg.direct_segment.clone();
        let frames = crate::addr::page_rounded(bytes) >> 12;
        self.back_allocations()?;
        let start = match self.buddy.find_free_run(frames, 512) {
            Some(s) => Some(s),
            None if cfg.self_balloon => self.self_balloon(frames),
            None => None,
        };
        let Some(start) = start.filter(|&s| self.buddy.alloc_range(s, frames)) else {
            self.segments.failed += 1;
            return Ok(());
        };
        let mut rng = Rng::new(self.seed ^ pid as u64, rng::stream::PLACEMENT);
        let filter = EscapeFilter::new(cfg.filter_bits, cfg.filter_hashes, &mut rng);
        let mut ds = DirectSegment::new(Segment::new(va.0, frames << 12, start << 12), filter);
        while ds.escaped_pages() < (cfg.bad_pages as usize).min(frames as usize) {
            ds.escape(va.0 + (rng.below(frames) << 12));
        }
        self.process_mut(pid)?.segment = Some(ds);
        self.segments.created += 1;
        self.segments.bytes += frames << 12;
        // The guest zeroes the region it reserved: the VMM backs it now (not a fault).
        self.back_allocations()?;
        Ok(())
    }

    /// Self-ballooning to grow a segment: hot-plug `frames` only if the reserve's next frames
    /// start at `at`, right after the segment's memory.
    fn self_balloon_at(&mut self, at: u64, frames: u64) -> bool {
        let next = self.vmm.as_ref().map(|v| v.layout().reserve.0);
        next == Some(at) && self.self_balloon(frames) == Some(at)
    }

    /// Self-ballooning (Gandhi §IV, Fig 9): the balloon driver takes `frames` free frames
    /// wherever they are and gives them to the VMM, which hot-plugs as many contiguous frames
    /// from the guest's balloon reserve. Returns where they start.
    fn self_balloon(&mut self, frames: u64) -> Option<u64> {
        let vmm = self.vmm.as_mut()?;
        if self.buddy.free_frames() < frames {
            return None;
        }
        let start = vmm.hotplug(frames)?;
        // The balloon holds its frames for good (given up to the VMM): they stay allocated.
        for _ in 0..frames {
            self.buddy.alloc(0).expect("free frames were counted");
        }
        // The balloon does not touch its frames: nothing for the VMM to back.
        self.buddy.take_journal();
        self.buddy.free_range(start.0, frames);
        self.segments.ballooned_frames += frames;
        self.segments.balloon_cycles += frames * self.cfg.direct_segment.balloon_cycles_per_page;
        Some(start.0)
    }

    /// Grow `pid`'s brk heap by `bytes` (glibc's main arena asking for more memory); returns
    /// where the new memory starts, or `None` under a layout without a brk heap (`packed`).
    pub fn sbrk(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<Option<VirtAddr>> {
        self.process_mut(pid)?.sbrk(bytes, kind)
    }

    /// `pid` starts a thread: its stack is mapped (under a layout that models stacks).
    pub fn start_thread(&mut self, pid: u16) -> Result<()> {
        self.process_mut(pid)?.thread_stack().map(|_| ())
    }

    /// Map the whole user address space as one anonymous region: how trace-driven processes,
    /// whose allocations we never saw, get demand paging everywhere.
    pub fn map_everything(&mut self, pid: u16) -> Result<()> {
        self.process_mut(pid)?.map_everything();
        Ok(())
    }

    /// A process together with what its page table needs to change (split borrows of `self`).
    fn process_and_pt(
        &mut self,
        pid: u16,
    ) -> Result<(&mut Process<T>, PtContext<'_>, &mut dyn FramePolicy)> {
        let p = self
            .processes
            .get_mut(pid as usize)
            .ok_or_else(|| Error::Workload(format!("no process with pid {pid}")))?;
        let ctx = PtContext {
            store: &mut self.store,
            buddy: &mut self.buddy,
        };
        Ok((p, ctx, self.frames.as_mut()))
    }

    /// Unmap `[va, va+bytes)`; frees frames and returns the unmapped pages so the MMU can shoot
    /// down its TLB entries.
    pub fn munmap(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<Vec<(Vpn, PageSize)>> {
        self.stats.munmaps += 1;
        let (p, mut ctx, frames) = self.process_and_pt(pid)?;
        let gone = p.munmap(&mut ctx, frames, va, bytes)?;
        if let Some(v) = &mut self.vmm {
            for &(vpn, size) in &gone {
                v.shadow_unmap(pid, vpn, size);
            }
        }
        Ok(gone)
    }

    /// Handle a page fault at `va`: choose a page size, allocate the frame(s), write the page
    /// table, record ground truth. Returns the new mapping and the cycles the fault costs the
    /// core: the minor-fault cost plus whatever the page table spent allocating memory and
    /// moving entries (all in the handler, so the faulting core waits for it).
    /// With swapping, the fault first reclaims memory down to the free-frame watermark, and a
    /// fault on a swapped page is major: it also costs the page-in, and every page-out on the
    /// way costs its write.
    pub fn fault(&mut self, pid: u16, va: VirtAddr) -> Result<(Pfn, PageSize, u64)> {
        let majors = self.stats.faults.major;
        let per_pt_page = self.cfg.pt_page_fault_cycles;
        let pages_before = match per_pt_page {
            0 => 0,
            _ => self.process(pid)?.pt.table_pages(),
        };
        let (pfn, size, mut pt_cycles) = self.map_page(pid, va)?;
        if per_pt_page > 0 {
            let new = self
                .process(pid)?
                .pt
                .table_pages()
                .saturating_sub(pages_before);
            self.stats.faults.pt_pages += new;
            self.stats.faults.pt_page_cycles += new * per_pt_page;
            pt_cycles += new * per_pt_page;
        }
        if self.stats.faults.major == majors {
            self.stats.faults.minor += 1;
        }
        let cycles =
            self.cfg.minor_fault_cycles + pt_cycles + std::mem::take(&mut self.swap_cycles);
        self.stats.faults.cycles += cycles;
        Ok((pfn, size, cycles))
    }

    /// Map every page of `[va, va+bytes)` now, as a program's initialisation loop (or
    /// `MAP_POPULATE`) does before the measured part. Not charged to the core.
    pub fn populate(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<()> {
        let end = va.0 + bytes;
        let mut at = va.0;
        while at < end {
            let (pfn, size, _) = self.map_page(pid, VirtAddr(at))?;
            // The initialisation loop touches each page in turn: an access for `lru` and
            // `horizon`, so untouched pages age in the order they were set up.
            self.touch(pfn);
            self.stats.faults.populated += 1;
            at = (at & !size.mask()) + size.bytes();
        }
        // Pages evicted on the way moved before the program's measured part: no copy to time,
        // and no swap I/O to charge.
        self.copies.clear();
        self.swap_cycles = 0;
        Ok(())
    }

    fn map_page(&mut self, pid: u16, va: VirtAddr) -> Result<(Pfn, PageSize, u64)> {
        self.reclaim()?;
        let majors = self.stats.faults.major;
        let paging = Paging {
            thp: match self.cfg.thp {
                ThpPolicy::Never => Thp::Never,
                ThpPolicy::Always => Thp::Always {
                    no_thp_per_mille: per_mille(self.cfg.thp_ineligible),
                },
            },
            eager: self.cfg.eager_paging,
        };
        let before = std::mem::take(&mut self.stats.faults);
        let mut faults = before.clone();
        // Shadow paging traps the guest's page-table writes: the leaf, and one per table page
        // the mapping adds (counted only when a VMM shadows).
        let shadowed = self.vmm.as_ref().is_some_and(vmm::Vmm::shadows);
        let (p, mut ctx, frames) = self.process_and_pt(pid)?;
        let table_bytes = shadowed.then(|| p.pt.bytes());
        let mut mapped = p.fault(&mut ctx, frames, va, paging, &mut faults);
        if mapped.is_err() {
            // The page's own part of memory (its partition) is full: reclaim that part and
            // fault again, the fault counted once.
            if let Some((lo, hi)) = frames.full_region() {
                if self.reclaim_region(lo, hi)? {
                    faults = before;
                    let (p, mut ctx, frames) = self.process_and_pt(pid)?;
                    mapped = p.fault(&mut ctx, frames, va, paging, &mut faults);
                }
            }
        }
        let (p, _, _) = self.process_and_pt(pid)?;
        let pt_writes =
            table_bytes.map_or(0, |before| 1 + p.pt.bytes().saturating_sub(before) / 4096);
        let mut alloc_cycles = p.pt.take_alloc_cycles();
        let mut rehash_cycles = p.pt.take_rehash_cycles();
        self.stats.faults = faults;
        let (pfn, size) = mapped?;
        if self.stats.faults.major != majors {
            self.stats.swap.ins += 1;
            let cycles = self.cfg.swap.page_in_cycles * size.base_pages();
            self.stats.swap.in_cycles += cycles;
            self.swap_cycles += cycles;
        }
        self.note_resident(pid, va.vpn().align_down(size), pfn, size);
        let (evict_alloc, evict_rehash) = self.move_evicted()?;
        alloc_cycles += evict_alloc;
        rehash_cycles += evict_rehash;
        let (remap_alloc, remap_rehash) = self.remap_migrated()?;
        alloc_cycles += remap_alloc;
        rehash_cycles += remap_rehash;
        self.stats.faults.pt_alloc_cycles += alloc_cycles;
        self.stats.faults.pt_rehash_cycles += rehash_cycles;
        let mut vmm_cycles = self.back_allocations()?;
        if let Some(v) = &mut self.vmm {
            vmm_cycles += v.shadow_map(pid, va.vpn().align_down(size), (pfn, size), pt_writes)?;
        }
        Ok((pfn, size, alloc_cycles + rehash_cycles + vmm_cycles))
    }

    /// Remap the pages compaction migrated (a remap can grow a table and compact again);
    /// returns the page-table allocation and rehash cycles the remaps cost.
    fn remap_migrated(&mut self) -> Result<(u64, u64)> {
        let mut cycles = 0;
        let mut rehash = 0;
        loop {
            let moves = self.buddy.take_moves();
            if moves.is_empty() {
                return Ok((cycles, rehash));
            }
            for (old, new) in moves {
                // Frames without an owner are fragmentation pins: nothing maps them.
                for p in &mut self.processes {
                    let mut ctx = PtContext {
                        store: &mut self.store,
                        buddy: &mut self.buddy,
                    };
                    if let Some(vpn) = p.migrate(&mut ctx, old, new)? {
                        cycles += p.pt.take_alloc_cycles();
                        rehash += p.pt.take_rehash_cycles();
                        self.shootdowns.push((p.pid, vpn, PageSize::Size4K));
                        self.stats.faults.migrated += 1;
                        break;
                    }
                }
            }
        }
    }

    /// Move the pages the frame policy evicted to their new frames, and page out those it
    /// evicted to nowhere; returns the page-table allocation and rehash cycles the remaps
    /// cost.
    fn move_evicted(&mut self) -> Result<(u64, u64)> {
        let mut cycles = (0, 0);
        for e in self.frames.take_evictions() {
            let (p, mut ctx, _) = self.process_and_pt(e.pid)?;
            p.relocate(&mut ctx, e.vpn, e.size, e.to)?;
            cycles.0 += p.pt.take_alloc_cycles();
            cycles.1 += p.pt.take_rehash_cycles();
            self.shootdowns.push((e.pid, e.vpn, e.size));
            self.copies.push(PageCopy {
                from: e.from,
                to: e.to,
                size: e.size,
            });
            self.stats.faults.evicted += 1;
            self.note_resident(e.pid, e.vpn, e.to, e.size);
        }
        for out in self.frames.take_page_outs() {
            // The page that evicted it holds its frame now: nothing to free.
            self.page_out(out.pid, out.vpn, out.size, false)?;
            self.stats.swap.policy_outs += 1;
            self.stats.swap.ghost_outs += u64::from(out.ghost);
        }
        Ok(cycles)
    }

    /// Swapping: a page just mapped to `pfn` joins the reclaim's FIFO (or, with `lru`, its
    /// queue, stamped now) if the frame is the buddy allocator's (pages in the frame policy's
    /// own memory leave it only when the policy evicts them).
    fn note_resident(&mut self, pid: u16, base: Vpn, pfn: Pfn, size: PageSize) {
        if !self.cfg.swap.enabled || self.frames.owns(pfn) {
            return;
        }
        if self.cfg.swap.policy == SwapPolicy::Lru {
            // Mapped now: as recent as the reference that faulted it in.
            self.stamps[pfn.0 as usize] = self.access_clock;
            self.lru.push(self.access_clock, pid, base, size);
        } else {
            self.resident.push_back((pid, base, size));
        }
    }

    /// A reference to the page whose first frame is `pfn` (what the MMU translated to): with
    /// `lru` and `horizon`, the access clock ticks and stamps it; otherwise nothing.
    #[inline]
    pub fn touch(&mut self, pfn: Pfn) {
        if self.tracks_access {
            self.stamp(pfn);
        }
    }

    /// [`Os::touch`] of the page that maps `va` in `pid`, if any (a functional run that does
    /// not translate: fast-forward's skipped records).
    #[inline]
    pub fn touch_va(&mut self, pid: u16, va: VirtAddr) {
        if self.tracks_access {
            if let Some((pfn, _)) = self.truth(pid, va) {
                self.stamp(pfn);
            }
        }
    }

    fn stamp(&mut self, pfn: Pfn) {
        self.access_clock += 1;
        let now = self.access_clock;
        if let Some(s) = self.stamps.get_mut(pfn.0 as usize) {
            *s = now;
        }
        if self.frames.touched(pfn, now) {
            self.stats.swap.revivals += 1;
        }
    }

    /// A queued page of the reclaim, if it is still resident as it was queued, in a frame of
    /// the buddy allocator's: its frame. Entries whose page has gone (unmapped, paged out,
    /// moved into the policy's memory, or now part of another mapping) give `None`.
    fn queued_frame(&self, pid: u16, base: Vpn, size: PageSize) -> Result<Option<Pfn>> {
        Ok(match self.process(pid)?.truth(base.addr()) {
            Some((pfn, s)) if s == size && base.align_down(s) == base && !self.frames.owns(pfn) => {
                Some(pfn)
            }
            _ => None,
        })
    }

    /// Swapping: page out the longest-resident pages until `min_free_frames` frames are free
    /// (or no page of the buddy allocator's is left to page out); with `lru`, see
    /// [`Os::reclaim_lru`].
    fn reclaim(&mut self) -> Result<()> {
        if !self.cfg.swap.enabled {
            return Ok(());
        }
        if self.cfg.swap.policy == SwapPolicy::Lru {
            return self.reclaim_lru();
        }
        while self.buddy.free_frames() < self.cfg.swap.min_free_frames {
            let Some(v) = self.next_victim()? else {
                return Ok(());
            };
            self.page_out(v.pid, v.base, v.size, true)?;
        }
        Ok(())
    }

    /// `lru`: when free frames are below the low watermark, page out the least recently used
    /// pages of the buddy allocator's memory until the high watermark is free (kswapd's
    /// behaviour, run in the faulting core's handler as the rest of reclaim is).
    fn reclaim_lru(&mut self) -> Result<()> {
        let total = self.buddy.total_frames();
        let (low, high) = self.cfg.swap.watermarks(total);
        if self.buddy.free_frames() >= low {
            return Ok(());
        }
        while self.buddy.free_frames() < high {
            let Some(v) = self.next_victim()? else {
                return Ok(());
            };
            self.note_first_out(total);
            self.page_out(v.pid, v.base, v.size, true)?;
        }
        Ok(())
    }

    /// The frame policy refused a page because the part of memory it confines the page to,
    /// frames `lo..hi` (a SPARTA partition), is full while the rest may have room: page out
    /// that part's pages, in the order reclaim takes them (`lru`: least recently used;
    /// otherwise longest resident), until its share of the free-frame target (the high
    /// watermark, or `min_free_frames`; at least one frame) is free. Linux reclaims a NUMA
    /// node the same way when an allocation bound to it fails. Pages of other parts keep
    /// their places in the queue. Returns whether a frame was freed.
    fn reclaim_region(&mut self, lo: u64, hi: u64) -> Result<bool> {
        if !self.cfg.swap.enabled {
            return Ok(false);
        }
        let total = self.buddy.total_frames();
        let target = if self.cfg.swap.policy == SwapPolicy::Lru {
            self.cfg.swap.watermarks(total).1
        } else {
            self.cfg.swap.min_free_frames
        };
        let want = (target * (hi - lo) / total.max(1)).max(1);
        self.stats.swap.region_reclaims += 1;
        let mut freed = 0;
        let mut elsewhere = Vec::new();
        while freed < want {
            let Some(v) = self.next_victim()? else {
                break;
            };
            if !(lo..hi).contains(&v.pfn.0) {
                elsewhere.push(v);
                continue;
            }
            self.note_first_out(total);
            self.page_out(v.pid, v.base, v.size, true)?;
            freed += v.size.base_pages();
        }
        // Back in the queue as they were: the LRU by their queued times, the FIFO at its front
        // in their order.
        for v in elsewhere.into_iter().rev() {
            if self.cfg.swap.policy == SwapPolicy::Lru {
                self.lru.push(v.queued, v.pid, v.base, v.size);
            } else {
                self.resident.push_front((v.pid, v.base, v.size));
            }
        }
        Ok(freed > 0)
    }

    /// The page reclaim would page out next, taken off its queue: the longest resident
    /// (`lru`: the least recently used; a page touched since it was queued goes back at its
    /// newer time) that is still resident in a frame of the buddy allocator's. `None` when
    /// the queue has no such page.
    fn next_victim(&mut self) -> Result<Option<Victim>> {
        loop {
            let (queued, pid, base, size) = if self.cfg.swap.policy == SwapPolicy::Lru {
                match self.lru.pop() {
                    Some(entry) => entry,
                    None => return Ok(None),
                }
            } else {
                match self.resident.pop_front() {
                    Some((pid, base, size)) => (0, pid, base, size),
                    None => return Ok(None),
                }
            };
            let Some(pfn) = self.queued_frame(pid, base, size)? else {
                continue;
            };
            if self.cfg.swap.policy == SwapPolicy::Lru {
                let last = self.stamps[pfn.0 as usize];
                if last > queued {
                    // Touched since it was queued: back in the queue at its true time.
                    self.lru.push(last, pid, base, size);
                    continue;
                }
            }
            return Ok(Some(Victim {
                queued,
                pid,
                base,
                size,
                pfn,
            }));
        }
    }

    /// `lru`: the fraction of memory in use when reclaim first pages out.
    fn note_first_out(&mut self, total: u64) {
        if self.cfg.swap.policy == SwapPolicy::Lru
            && self.stats.swap.first_out_utilisation.is_none()
        {
            let used = total - self.buddy.free_frames();
            self.stats.swap.first_out_utilisation = Some(used as f64 / total as f64);
        }
    }

    /// Write the `size` page at `base` of `pid` to the backing store: unmap it (the caller's
    /// shootdown queue gets it) and free its frame if `free`. Its write costs the faulting
    /// core `page_out_cycles` per 4 KiB.
    fn page_out(&mut self, pid: u16, base: Vpn, size: PageSize, free: bool) -> Result<()> {
        let (p, mut ctx, frames) = self.process_and_pt(pid)?;
        let pfn = p.swap_out(&mut ctx, base, size)?;
        if free {
            frames.free(ctx.buddy, pfn, size);
        }
        self.shootdowns.push((pid, base, size));
        let cycles = self.cfg.swap.page_out_cycles * size.base_pages();
        self.stats.swap.outs += 1;
        self.stats.swap.out_cycles += cycles;
        self.swap_cycles += cycles;
        Ok(())
    }

    /// A page walk of `pid` found `vpn`'s mapping with `dram_refs` references served by DRAM:
    /// the page table counts it, and a page that has become costly to translate moves into
    /// the frame policy's own memory (a RestSeg), evicting another page if the policy must.
    /// Returns whether the page moved; its shootdown and copy wait in the usual queues.
    pub fn walk_noted(&mut self, pid: u16, vpn: Vpn, dram_refs: u32) -> Result<bool> {
        let (p, mut ctx, _) = self.process_and_pt(pid)?;
        let costly = p.pt.note_walk(&mut ctx, vpn, dram_refs);
        // An aging pass the walk triggered waits for the system to run its memory accesses.
        self.processes[pid as usize].pt.take_scan(&mut self.scan);
        if !costly {
            return Ok(false);
        }
        let (p, mut ctx, frames) = self.process_and_pt(pid)?;
        let Some((_, size)) = p.truth(vpn.addr()) else {
            return Ok(false);
        };
        let base = vpn.align_down(size);
        let Some(to) = frames.promote(ctx.buddy, pid, base, size) else {
            return Ok(false);
        };
        let from = p.relocate(&mut ctx, base, size, to)?;
        frames.free(ctx.buddy, from, size);
        self.shootdowns.push((pid, base, size));
        self.copies.push(PageCopy { from, to, size });
        self.stats.promoted += 1;
        self.move_evicted()?;
        // A move has no fault to charge page-outs to (restrictive-only Utopia promotes
        // nothing: it has no FlexSeg pages).
        self.swap_cycles = 0;
        Ok(true)
    }

    /// Pages whose mapping changed under the MMU since the last call (compaction migrated
    /// them, the frame policy evicted them): their TLB entries must be shot down.
    pub fn take_shootdowns(&mut self) -> Vec<(u16, Vpn, PageSize)> {
        std::mem::take(&mut self.shootdowns)
    }

    /// Pages whose contents moved since the last call: the copies occupy the memory
    /// hierarchy (the caller runs them through it).
    pub fn take_copies(&mut self) -> Vec<PageCopy> {
        std::mem::take(&mut self.copies)
    }

    /// Whether aging passes wait for [`Os::take_scan`].
    #[inline]
    pub fn scan_pending(&self) -> bool {
        !self.scan.is_empty()
    }

    /// The page-table scans of the aging passes since the last call, moved into `into` (the
    /// caller runs their reads and writes through the memory hierarchy).
    pub fn take_scan(&mut self, into: &mut TableScan) {
        into.append(&mut self.scan);
    }

    /// The MMU translated the page whose first frame is `pfn` from a side path (a RestSeg
    /// walk): the frame policy may count it ([`FramePolicy::side_hit`]).
    #[inline]
    pub fn side_hit(&mut self, pfn: Pfn) {
        self.frames.side_hit(pfn);
    }

    /// Slots in use of each region the frame policy manages itself (Utopia's RestSegs).
    pub fn used_slots(&self) -> Vec<u64> {
        self.frames.used_slots()
    }

    /// Restart the counters (end of warm-up); contents stay.
    pub fn reset_stats(&mut self) {
        self.stats = OsStats::default();
        self.frames.reset_stats();
        if let Some(v) = &mut self.vmm {
            v.reset_stats();
        }
    }

    /// The ground-truth mapping of `va` in `pid`: the page the hardware must translate it to.
    /// On a VMM, the composition of the guest's mapping and the VMM's (gVA → hPA), at the
    /// smaller of the two page sizes.
    #[inline]
    pub fn truth(&self, pid: u16, va: VirtAddr) -> Option<(Pfn, PageSize)> {
        let p = self.processes.get(pid as usize)?;
        let guest = match p.segment_frame(va.vpn()) {
            Some(pfn) => (pfn, PageSize::Size4K),
            None => p.truth(va)?,
        };
        match &self.vmm {
            None => Some(guest),
            Some(v) => v.compose(va, guest),
        }
    }

    /// Fault injection, the self-test of `--verify` (`sim.verify_inject_after`): corrupt the
    /// entries of `pid`'s table that translate the page at `va` (see
    /// [`PageTable::corrupt`]); the ground truth stays as it was. Returns the page, to be
    /// shot down, or `None` if `va` is not mapped now.
    #[cold]
    pub fn corrupt_mapping(&mut self, pid: u16, va: VirtAddr) -> Option<(Vpn, PageSize)> {
        // Under shadow paging the hardware reads the shadow table: its entry lies instead.
        if let Some(v) = self.vmm.as_mut().filter(|v| v.shadows()) {
            let size = v.corrupt_shadow(pid, va)?;
            return Some((va.vpn().align_down(size), size));
        }
        // A page its direct segment maps: the segment registers lie instead.
        let p = self.processes.get_mut(pid as usize)?;
        if p.segment_frame(va.vpn()).is_some() {
            p.segment.as_mut()?.corrupt();
            return Some((va.vpn(), PageSize::Size4K));
        }
        let (_, size) = p.truth(va)?;
        let vpn = va.vpn().align_down(size);
        let p = self.processes.get(pid as usize)?;
        p.pt.corrupt(&mut self.store, vpn, size)
            .then_some((vpn, size))
    }

    /// Page-table bytes over all processes.
    pub fn pt_bytes(&self) -> u64 {
        self.processes.iter().map(|p| p.pt.bytes()).sum()
    }

    pub fn snapshot(&self) -> OsSnapshot {
        let order = self.cfg.physmem.fragmentation_order;
        OsSnapshot {
            faults: self.stats.faults.clone(),
            munmaps: self.stats.munmaps,
            promoted: self.stats.promoted,
            aging: self.stats.aging,
            swap: self.cfg.swap.enabled.then(|| SwapStats {
                swapped: self.processes.iter().map(|p| p.swapped_pages()).sum(),
                ..self.stats.swap
            }),
            pt_bytes: self.pt_bytes(),
            pt: self
                .processes
                .iter()
                .enumerate()
                .filter_map(|(pid, p)| Some((pid.to_string(), p.pt.stats()?)))
                .collect(),
            frames: self.frames.stats(),
            physmem: PhysMemSnapshot {
                total_frames: self.buddy.total_frames(),
                free_frames: self.buddy.free_frames(),
                pinned_frames: self.pinned.len() as u64,
                fmfi_initial: self.fmfi_initial,
                fmfi: self.buddy.fmfi(order),
                largest_free_order: self.buddy.largest_free_order(),
                compactions: self.buddy.stats().compactions,
                compaction_moves: self.buddy.stats().compaction_moves,
                compactions_refused: self.buddy.stats().compactions_refused,
                compactions_failed: self.buddy.stats().compactions_failed,
            },
            vmm: self.vmm.as_ref().map(vmm::Vmm::snapshot),
            segments: self
                .cfg
                .direct_segment
                .enabled
                .then(|| self.segments.clone()),
        }
    }
}

/// Take `frames` of memory in the largest blocks the allocator has (largest first, up to
/// 1 GiB each); returns the blocks. Stops early if memory runs out (it cannot at boot: the
/// amount is validated against the memory size).
fn keep_contiguous(buddy: &mut BuddyAllocator, frames: u64) -> Vec<(Pfn, u32)> {
    let mut kept = Vec::new();
    let mut left = frames;
    while left > 0 {
        let Some(largest) = buddy.largest_free_order() else {
            break;
        };
        let order = left.ilog2().min(largest);
        let Some(pfn) = buddy.alloc(order) else {
            break;
        };
        kept.push((pfn, order));
        left -= 1 << order;
    }
    kept
}

/// What a workload (or a trace reader) may do to the OS: the system calls a program makes to
/// set up its address space, and the read-only facts a caller needs about it. Workloads see
/// the OS only through this, whatever the scheme.
pub trait AddressSpaces {
    /// Start a process with an empty address space; returns its pid.
    fn spawn(&mut self) -> Result<u16>;
    /// Reserve `bytes` of virtual address space (no physical memory until first touch).
    fn mmap(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<VirtAddr>;
    /// Grow the brk heap by `bytes`: where the new memory starts, or `None` when the layout
    /// has no brk heap (`os.layout = "packed"`; a `malloc` then takes `mmap`ed arenas).
    fn sbrk(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<Option<VirtAddr>>;
    /// The program starts a thread (its stack is mapped where the layout models stacks).
    fn start_thread(&mut self, pid: u16) -> Result<()>;
    /// Map every page of `[va, va+bytes)` now (an initialisation loop or `MAP_POPULATE`).
    fn populate(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<()>;
    /// Make the whole user address space demand-paged (trace-driven processes).
    fn map_everything(&mut self, pid: u16) -> Result<()>;
    /// Unmap `[va, va+bytes)`; returns the pages whose translations must be shot down.
    fn munmap(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<Vec<(Vpn, PageSize)>>;
    /// Processes spawned so far.
    fn processes(&self) -> usize;
    /// The VMAs of `pid`.
    fn vmas(&self, pid: u16) -> Result<Vec<Vma>>;
    /// Mapped pages of `pid` of each size (4K, 2M, 1G).
    fn mapped_pages(&self, pid: u16) -> Result<[u64; 3]>;
}

impl<T: PageTable> AddressSpaces for Os<T> {
    fn spawn(&mut self) -> Result<u16> {
        Os::spawn(self)
    }
    fn mmap(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<VirtAddr> {
        Os::mmap(self, pid, bytes, kind)
    }
    fn sbrk(&mut self, pid: u16, bytes: u64, kind: MapKind) -> Result<Option<VirtAddr>> {
        Os::sbrk(self, pid, bytes, kind)
    }
    fn start_thread(&mut self, pid: u16) -> Result<()> {
        Os::start_thread(self, pid)
    }
    fn populate(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<()> {
        Os::populate(self, pid, va, bytes)
    }
    fn map_everything(&mut self, pid: u16) -> Result<()> {
        Os::map_everything(self, pid)
    }
    fn munmap(&mut self, pid: u16, va: VirtAddr, bytes: u64) -> Result<Vec<(Vpn, PageSize)>> {
        Os::munmap(self, pid, va, bytes)
    }
    fn processes(&self) -> usize {
        Os::processes(self)
    }
    fn vmas(&self, pid: u16) -> Result<Vec<Vma>> {
        Ok(self.process(pid)?.vmas().copied().collect())
    }
    fn mapped_pages(&self, pid: u16) -> Result<[u64; 3]> {
        Ok(self.process(pid)?.mapped_pages())
    }
}

/// The `os` subtree of the stats.
#[derive(Clone, Debug, Serialize)]
pub struct OsSnapshot {
    pub faults: FaultStats,
    pub munmaps: u64,
    /// Pages migrated into the frame policy's own memory (Utopia's PTE-based migration);
    /// always present, 0 for policies that never migrate.
    pub promoted: u64,
    /// Aging passes over the migration counters (with Utopia's decay; absent without a pass).
    #[serde(skip_serializing_if = "AgingStats::is_zero")]
    pub aging: AgingStats,
    /// Swap I/O (with `os.swap.enabled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
    pub pt_bytes: u64,
    /// Each process's page-table statistics, by pid, for organisations that keep their own
    /// (hashed tables: resizes, contiguous allocations, L2P use...).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub pt: std::collections::BTreeMap<String, serde_json::Value>,
    /// The frame policy's statistics, for policies that keep their own (Utopia's RestSegs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<serde_json::Value>,
    pub physmem: PhysMemSnapshot,
    /// The VMM below this guest OS, if it is virtualized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmm: Option<vmm::VmmSnapshot>,
    /// Direct segments (with `os.direct_segment`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<SegmentOsStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PhysMemSnapshot {
    pub total_frames: u64,
    pub free_frames: u64,
    pub pinned_frames: u64,
    /// FMFI right after fragmentation injection, before the workload ran.
    pub fmfi_initial: f64,
    /// FMFI at the end of the run.
    pub fmfi: f64,
    pub largest_free_order: Option<u32>,
    /// Since boot: contiguous allocations served by compaction, the movable frames they
    /// migrated, and compactions refused (FMFI above `compaction_max_fmfi`) or failed (no range
    /// free of frames that cannot move).
    pub compactions: u64,
    pub compaction_moves: u64,
    pub compactions_refused: u64,
    pub compactions_failed: u64,
}

#[cfg(test)]
mod tests;

/// What unit tests of the OS and the workloads boot: `mib` MiB of unfragmented memory, free
/// faults, no THP, and 4-level radix tables from the buddy allocator.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::pt::radix::RadixPageTable;

    pub fn config(mib: u64) -> OsConfig {
        OsConfig {
            minor_fault_cycles: 0,
            fault_model: FaultModel::Trap,
            pt_page_fault_cycles: 0,
            thp: ThpPolicy::Never,
            thp_ineligible: 0.0,
            hugetlb_1g: false,
            eager_paging: false,
            physmem: PhysMemConfig {
                bytes: mib << 20,
                fragmentation: 0.0,
                fragmentation_order: 9,
                compaction_max_fmfi: 0.75,
                contiguous_bytes: 0,
                frame_order: physmem::FrameOrder::Buddy,
            },
            shootdown_ipi_cycles: 0,
            swap: SwapConfig::default(),
            direct_segment: DirectSegmentConfig::default(),
            layout: LayoutKind::Linux,
            aslr: true,
        }
    }

    pub fn radix_os(cfg: &OsConfig, seed: u64) -> Os<RadixPageTable> {
        let tables = Box::new(|pt: &mut PtContext, _| RadixPageTable::new(pt, 4));
        Os::new(cfg, seed, tables, Box::new(BuddyFrames), None).unwrap()
    }
}
