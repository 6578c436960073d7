//! The MMU as a pipeline of stages: L1 TLBs → L2 TLB ∥ the scheme's side paths → the scheme's
//! L3 TLB level → the scheme's walker → a fault request handed back to the caller.
//!
//! The MMU is generic over the parts a scheme plugs into it ([`MmuScheme`]), so the reference
//! loop is compiled once per scheme with no virtual calls. It never calls the OS: it reads page
//! tables through [`PageTables`], and when a walk finds no mapping it returns
//! [`Outcome::Fault`]; the system lets the OS handle the fault and calls
//! [`Mmu::finish_fault`], which walks again as the re-executed instruction does.

pub mod config;
pub mod tlb;
pub mod walk;

use crate::addr::{translate, PageSize, Pfn, PhysAddr, VirtAddr, Vpn, BASE_PAGE_SHIFT};
use crate::error::{Error, Result};
use crate::mem::{Hierarchy, Level};
use crate::pt::direct::DirectSegment;
use crate::pt::host::HostTable;
use crate::pt::store::PtStore;
use crate::pt::PageTable;
use crate::trace::Op;
use config::{MmuConfig, TlbConfig};
use serde::Serialize;
use std::collections::BTreeMap;
use tlb::{Tlb, TlbStats};
use walk::{WalkPlan, WalkRefStats};

/// Where a translation was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    L1,
    L2,
    /// A scheme's side path beside the L2 TLB (range TLB, RestSeg walk, segment registers).
    Side,
    /// The scheme's L3 TLB level (POM-TLB).
    L3,
    Walk,
    /// The walk found no mapping; the OS handled a page fault first. A fault is a precise
    /// exception: the handler starts once every older instruction has retired, and the
    /// younger ones are fetched again when it returns, at cycle `resume`.
    Fault {
        resume: u64,
    },
}

#[derive(Clone, Copy, Debug)]
pub struct Translation {
    pub paddr: PhysAddr,
    pub size: PageSize,
    /// Cycles from the request to the physical address being known.
    pub latency: u64,
    pub found: Found,
}

/// What the MMU reads of the OS's state: each process's page table, the store holding the
/// tables' bytes, and (for bounds such as the perfect TLB only) the ground truth.
pub trait PageTables {
    type Table: PageTable;
    fn table(&self, pid: u16) -> Result<&Self::Table>;
    fn store(&self) -> &PtStore;
    fn truth(&self, pid: u16, va: VirtAddr) -> Option<(Pfn, PageSize)>;
    /// The VMM's mapping of guest-physical memory, when the processes run in a virtual
    /// machine (their tables then map to guest-physical frames).
    fn host(&self) -> Option<&HostTable> {
        None
    }
    /// The direct segment of process `pid` (its segment registers), if it has one.
    fn segment(&self, _pid: u16) -> Option<&DirectSegment> {
        None
    }
}

/// What a walk reads besides the walker's own structures.
pub struct WalkEnv<'a, T> {
    /// The process's page table, and the store holding its pages.
    pub table: &'a T,
    pub store: &'a PtStore,
    /// The VMM's nested page table and segment, when the process runs in a virtual machine.
    pub host: Option<&'a HostTable>,
    /// The process's direct segment, if it has one.
    pub segment: Option<&'a DirectSegment>,
    /// The L2 TLB: x86 caches nested (gPA → hPA) translations in it beside ordinary ones
    /// (Gandhi et al. Table VI: "EPT TLB/NTLB shares the TLB").
    pub l2tlb: &'a mut TlbLevel,
}

/// A translation a side path or an L3 TLB supplies: the page and the cycles it took.
#[derive(Clone, Copy, Debug)]
pub struct StageHit {
    pub pfn: Pfn,
    pub size: PageSize,
    pub latency: u64,
}

/// The parts of the MMU a scheme supplies. Every method but the walk has a default that
/// leaves the stage out, so a scheme states only what it adds.
pub trait MmuScheme: Send + 'static {
    /// The page-table organisation its walker reads (an associated type: no downcast).
    type Table: PageTable;

    /// Parts all cores' MMUs share, built once per system (by the scheme's `Scheme::shared`)
    /// and handed to the stages that use them: a POM-TLB is one array in DRAM that every core
    /// probes and fills. `()` for a scheme whose parts are all per core.
    type Shared: Send + 'static;

    /// A bound, not hardware: every translation comes from the OS's ground truth at the L1
    /// TLB's latency and nothing is cached or walked (Utopia's P-TLB).
    const PERFECT: bool = false;

    /// The OS wants to hear of every page walk that found a mapping ([`Mmu::walk_notes`]):
    /// Utopia's PTE-based migration counts walks and their DRAM references per page.
    const NOTES_WALKS: bool = false;

    /// The OS wants to hear of every translation a side path resolved (`Found::Side`): the
    /// system tells it the page's frame ([`crate::os::Os::side_hit`]). Utopia counts RestSeg
    /// walk hits per slot for its reuse statistics.
    const NOTES_SIDE_HITS: bool = false;

    /// A side path's translation fills the L2 TLB as well as the L1 TLB, as a walk's does
    /// (Utopia's RestSeg walk); otherwise only the L1 TLB (RMM's range TLB is itself the
    /// L2-level structure of its translations).
    const SIDE_HITS_FILL_L2: bool = false;

    /// A translation the side paths or the walker made comes back from memory with the data
    /// (SPARTA, Fig 3d: the request went to the partition by virtual address, and the data
    /// read there follows the translation): the system then reads the data at memory and
    /// puts it in the L1D, whose lookup it skips ([`Hierarchy::read_at_memory`]).
    const DATA_WITH_TRANSLATION: bool = false;

    /// Side paths looked up in parallel with the L2 TLB, at cycle `now`, reading the tables
    /// of process `asid` from `tables` if they need to (a RestSeg walk reads its TAR and SF).
    /// `l2_hit` says whether the L2 TLB had the translation: a side path that the L2 TLB's
    /// answer aborts (Utopia's RestSeg walk, §5.7, Fig 18) sends nothing to memory then.
    /// Returns the translation, if a side path has it, and the cycles the side paths took.
    /// The first lookup to answer with the translation serves it and cancels the other (a
    /// RestSeg hit aborts the L2 TLB access, Utopia §5.7.2; a segment translates beside the
    /// L2 TLB, Gandhi Table I): a side path's hit costs its own cycles, an L2 hit the L2
    /// TLB's, and of two hits the faster serves (the L2 TLB on a tie). When both miss, the
    /// walk starts once both have answered.
    #[allow(clippy::too_many_arguments)]
    fn side_lookup<P: PageTables<Table = Self::Table>>(
        &mut self,
        _va: VirtAddr,
        _asid: u16,
        _l2_hit: bool,
        _now: u64,
        _tables: &P,
        _mem: &mut Hierarchy,
        _shared: &mut Self::Shared,
    ) -> (Option<StageHit>, u64) {
        (None, 0)
    }

    /// The side paths' lookup of the access a page fault re-executes, at cycle `now`: by
    /// default the same lookup as before the fault. A scheme whose side paths cannot have
    /// gained the page during the fault (the handler fills no TLB) answers the miss without
    /// probing, so that each access counts once; the latency is still paid.
    #[allow(clippy::too_many_arguments)]
    fn side_lookup_after_fault<P: PageTables<Table = Self::Table>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        now: u64,
        tables: &P,
        mem: &mut Hierarchy,
        shared: &mut Self::Shared,
    ) -> (Option<StageHit>, u64) {
        self.side_lookup(va, asid, false, now, tables, mem, shared)
    }

    /// An L3 TLB level probed after the L2 TLB (and side paths) miss, before the walk.
    /// `latency` is what the probe cost whether or not it hit.
    fn l3_lookup(
        &mut self,
        _va: VirtAddr,
        _asid: u16,
        _now: u64,
        _mem: &mut Hierarchy,
        _shared: &mut Self::Shared,
    ) -> (Option<StageHit>, u64) {
        (None, 0)
    }

    /// Plan the walk for `va` from the scheme's own table (`env.table`), recording every
    /// memory reference in `plan`; returns the mapping, or `None` if the table has none (a
    /// page fault).
    fn plan_walk(
        &mut self,
        va: VirtAddr,
        asid: u16,
        env: &mut WalkEnv<'_, Self::Table>,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)>;

    /// A walk found `(pfn, size)` for `va` at cycle `now`: fill the scheme's own structures
    /// (L3 TLB, range TLB after a background range-table walk, ...).
    #[allow(clippy::too_many_arguments)]
    fn after_walk(
        &mut self,
        _va: VirtAddr,
        _asid: u16,
        _pfn: Pfn,
        _size: PageSize,
        _table: &Self::Table,
        _store: &PtStore,
        _now: u64,
        _mem: &mut Hierarchy,
        _shared: &mut Self::Shared,
    ) {
    }

    /// Drop cached translations of the `size` page at `vpn` (a shootdown). Every core's MMU
    /// is told, so a shared structure is told once per core: dropping must be idempotent.
    fn invalidate(&mut self, _vpn: Vpn, _size: PageSize, _asid: u16, _shared: &mut Self::Shared) {}

    /// Drop every cached walk state (PWCs, CWCs), as a shootdown does.
    fn flush(&mut self) {}

    fn reset_stats(&mut self) {}

    /// The scheme's counters, merged into the `mmu` stats subtree under their own names
    /// (`pwc`, `cwc`, `range_tlb`...).
    fn stats(&self) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::new()
    }

    /// The shared parts' counters, in the system's total `mmu` subtree only (no core owns
    /// them).
    fn shared_stats(_shared: &Self::Shared) -> BTreeMap<&'static str, serde_json::Value> {
        BTreeMap::new()
    }

    fn reset_shared_stats(_shared: &mut Self::Shared) {}
}

/// A scheme's counters as a stats subtree (what [`MmuScheme::stats`] returns).
pub fn stats_value<T: Serialize>(counters: &T) -> serde_json::Value {
    serde_json::to_value(counters).expect("stats always serialise")
}

/// A level of TLB arrays probed in parallel. The simulator probes them smallest page size
/// first and stops at the hit (an entry lives in one array only), which is what parallel
/// hardware returns, without paying for probes whose result cannot matter.
pub struct TlbLevel {
    arrays: Vec<(String, Tlb)>,
    latency: u64,
    stats: TlbStats,
    /// What the level's last operation was, if it was a lookup that hit: see
    /// [`TlbLevel::lookup`].
    last_hit: Option<LastHit>,
}

/// A lookup that hit: the 4 KiB page and address space looked up, the array that answered
/// and what it answered.
#[derive(Clone, Copy, Debug)]
struct LastHit {
    page: u64,
    asid: u16,
    array: usize,
    pfn: Pfn,
    size: PageSize,
}

impl TlbLevel {
    pub fn new(cfgs: &BTreeMap<String, TlbConfig>) -> TlbLevel {
        let mut arrays: Vec<(String, Tlb)> = cfgs
            .iter()
            .filter(|(_, c)| c.entries > 0)
            .map(|(n, c)| (n.clone(), Tlb::new(c)))
            .collect();
        arrays.sort_by_key(|(_, t)| t.smallest_size());
        let latency = arrays.iter().map(|(_, t)| t.latency()).max().unwrap_or(0);
        TlbLevel {
            arrays,
            latency,
            stats: TlbStats::default(),
            last_hit: None,
        }
    }

    pub fn latency(&self) -> u64 {
        self.latency
    }

    /// Look `va` up in each array in turn, up to the first that holds it.
    ///
    /// A lookup of the page the level's last operation, a lookup, found (the next access of a
    /// stream) is answered from that: the arrays before the one that answered miss again and
    /// change nothing, and that one hits the entry its last lookup hit, which changes nothing
    /// but counters either ([`SetAssoc`](crate::assoc::SetAssoc)'s repeated hit). Only the
    /// counters are updated, without following the arrays' storage to the entry.
    #[inline(always)]
    pub fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        if let Some(hit) = self.repeat(va, asid) {
            self.count_repeat(1);
            return Some(hit);
        }
        self.lookup_arrays(va.0 >> BASE_PAGE_SHIFT, va, asid)
    }

    /// What [`TlbLevel::lookup`] answers if `va` is on the page the last lookup found,
    /// without looking it up (nothing counted); `None` says nothing about `va`.
    #[inline(always)]
    pub fn repeat(&self, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        let last = self.last_hit?;
        (last.page == va.0 >> BASE_PAGE_SHIFT && last.asid == asid).then_some((last.pfn, last.size))
    }

    /// Count the lookup [`TlbLevel::repeat`] answered, `n` times.
    #[inline(always)]
    pub fn count_repeat(&mut self, n: u64) {
        let Some(last) = self.last_hit else {
            return;
        };
        self.stats.accesses += n;
        self.stats.hits += n;
        for (_, t) in &mut self.arrays[..last.array] {
            t.count_lookups(false, n);
        }
        self.arrays[last.array].1.count_lookups(true, n);
    }

    /// [`TlbLevel::lookup`] of another page than the last lookup's.
    #[inline]
    fn lookup_arrays(&mut self, page: u64, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        self.stats.accesses += 1;
        self.last_hit = None;
        for (array, (_, t)) in self.arrays.iter_mut().enumerate() {
            if let Some((pfn, size)) = t.lookup(va, asid) {
                self.stats.hits += 1;
                self.last_hit = Some(LastHit {
                    page,
                    asid,
                    array,
                    pfn,
                    size,
                });
                return Some((pfn, size));
            }
        }
        self.stats.misses += 1;
        None
    }

    /// Install a translation in the arrays that hold its size; if none does, splinter it into
    /// the 4 KiB page containing `va` (how a 4K-only TLB caches a piece of a huge page).
    /// Called only right after [`TlbLevel::lookup`] of `va` missed here, so the entry is known
    /// to be absent and the arrays skip their search.
    pub fn fill(&mut self, va: VirtAddr, asid: u16, pfn: Pfn, size: PageSize) {
        self.last_hit = None;
        if self.arrays.iter().any(|(_, t)| t.holds(size)) {
            for (_, t) in self.arrays.iter_mut().filter(|(_, t)| t.holds(size)) {
                t.insert_absent(va, asid, pfn, size);
            }
        } else {
            let piece = Pfn(pfn.0 + ((va.0 & size.mask()) >> 12));
            for (_, t) in self
                .arrays
                .iter_mut()
                .filter(|(_, t)| t.holds(PageSize::Size4K))
            {
                t.insert_absent(va, asid, piece, PageSize::Size4K);
            }
        }
    }

    /// Drop the translation of the `size` page at `vpn`, and the 4 KiB pieces of it a
    /// smaller array may hold (splintered huge pages).
    pub fn invalidate_page(&mut self, vpn: Vpn, size: PageSize, asid: u16) {
        self.last_hit = None;
        for (_, t) in &mut self.arrays {
            t.invalidate_page(vpn, size, asid);
            if size != PageSize::Size4K {
                t.invalidate_pieces(vpn, size, asid);
            }
        }
    }

    fn snapshot(&self) -> TlbLevelSnapshot {
        TlbLevelSnapshot {
            total: self.stats,
            arrays: self
                .arrays
                .iter()
                .map(|(n, t)| (n.clone(), t.stats()))
                .collect(),
        }
    }

    fn reset_stats(&mut self) {
        self.stats = TlbStats::default();
        self.arrays.iter_mut().for_each(|(_, t)| t.reset_stats());
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MmuCounters {
    pub translations: u64,
    pub l1_misses: u64,
    pub l2_misses: u64,
    pub walks: u64,
    pub walk_cycles: u64,
    /// Cycles walks waited for a free walker.
    pub walker_queue_cycles: u64,
    /// Cycles from each L1 TLB miss (the `l1_misses`, instruction and data side) until the
    /// translation is known: the L2 TLB lookup in parallel with the scheme's side paths (range
    /// TLB, RestSeg walk), the L3 (POM) TLB probe, the wait for a walker and the walk. A
    /// faulting translation counts its failed walk and, after the fault, the side-path lookup
    /// or walk that finds the new mapping; the wait for older instructions to retire and the
    /// fault handler itself are not counted. `translation_cycles / l1_misses` is the average
    /// translation latency past the L1 TLB (Utopia Fig 16b). A perfect TLB never misses, so 0.
    pub translation_cycles: u64,
    pub faults: u64,
    pub shootdowns: u64,
    /// Translations a TLB held but whose walk had not replied yet, and the cycles they waited
    /// for it (`mmu.wait_for_walks`; 0 without it).
    pub walk_waits: u64,
    pub walk_wait_cycles: u64,
}

/// A walk that found no mapping: what [`Mmu::finish_fault`] needs to resume it once the OS
/// has mapped the page.
#[derive(Clone, Copy, Debug)]
pub struct FaultRequest {
    pub va: VirtAddr,
    pub pid: u16,
    op: Op,
    /// Cycle the translation was requested.
    issued: u64,
    /// The walker that walked (unused by a perfect TLB).
    slot: usize,
    /// Cycle the failed walk ended.
    pub walked: u64,
    /// Cycles before the walk (TLB levels, L3).
    before_walk: u64,
    /// The guest-physical address the VMM must back (an EPT violation), when the walk failed
    /// in the host dimension; `None` for a guest page fault.
    pub host: Option<PhysAddr>,
}

/// The result of a translation request.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    Done(Translation),
    /// No mapping: the OS must handle a page fault, then [`Mmu::finish_fault`] completes it.
    Fault(FaultRequest),
}

pub struct Mmu<S: MmuScheme> {
    itlb: TlbLevel,
    l1: TlbLevel,
    l2: TlbLevel,
    scheme: S,
    walker_free_at: Vec<u64>,
    /// The last walks' pages and when their replies arrive, if accesses wait for a walk in
    /// flight (`mmu.wait_for_walks`).
    in_flight: Option<WalksInFlight>,
    /// Cycles one way from the core to its walkers: 0 for its own; the way to an IOMMU
    /// (`mmu.walker_sharing`), which the request and the reply both travel.
    walk_trip: u64,
    entry: Level,
    plan: WalkPlan,
    pub counters: MmuCounters,
    pub walk_refs: WalkRefStats,
    /// The walks the OS wants to hear of ([`MmuScheme::NOTES_WALKS`]) since the system last
    /// took them; the MMU never calls into the OS itself.
    pub walk_notes: Vec<WalkNote>,
}

/// A page walk that found a mapping, for the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkNote {
    pub pid: u16,
    pub vpn: Vpn,
    /// Walk references served by DRAM: the walk's cost in Utopia §5.5's terms.
    pub dram_refs: u32,
}

/// The last walks' pages and the cycles their replies reach the core (`mmu.wait_for_walks`):
/// the TLBs take a walk's translation when the walk is simulated, and an access to the page
/// issued before the reply waits for it, as the TLB's MSHR holding the walk would make it.
/// A ring of as many walks as there are walkers (at most [`WalksInFlight::MOST`]): no more
/// are in flight at once.
struct WalksInFlight {
    /// (address space, the page's first virtual address, its bytes, the reply's cycle).
    walks: Vec<(u16, u64, u64, u64)>,
    next: usize,
    /// The latest reply noted: an access issued from then on waits for no walk.
    latest: u64,
}

impl WalksInFlight {
    /// More walkers than this share the ring's slots: a walk older than the last 64 has
    /// replied in any run we know of.
    const MOST: usize = 64;

    fn new(walkers: usize) -> WalksInFlight {
        WalksInFlight {
            walks: vec![(0, 0, 0, 0); walkers.clamp(1, Self::MOST)],
            next: 0,
            latest: 0,
        }
    }

    fn note(&mut self, asid: u16, va: VirtAddr, size: PageSize, ready: u64) {
        let bytes = size.bytes();
        self.walks[self.next] = (asid, va.0 & !(bytes - 1), bytes, ready);
        self.next = (self.next + 1) % self.walks.len();
        self.latest = self.latest.max(ready);
    }

    /// Cycles an access that would have `va`'s translation at cycle `at` waits for the walk
    /// bringing it.
    fn wait(&self, asid: u16, va: VirtAddr, at: u64) -> u64 {
        if self.latest <= at {
            return 0;
        }
        self.walks
            .iter()
            .filter(|&&(a, base, bytes, _)| a == asid && va.0.wrapping_sub(base) < bytes)
            .map(|&(.., ready)| ready.saturating_sub(at))
            .max()
            .unwrap_or(0)
    }
}

impl<S: MmuScheme> Mmu<S> {
    pub fn new(cfg: &MmuConfig, scheme: S) -> Mmu<S> {
        let mut itlb_cfg = BTreeMap::new();
        itlb_cfg.insert("itlb".to_string(), cfg.itlb.clone());
        Mmu {
            itlb: TlbLevel::new(&itlb_cfg),
            l1: TlbLevel::new(&cfg.l1tlb),
            l2: TlbLevel::new(&cfg.l2tlb),
            scheme,
            walker_free_at: vec![0; cfg.walkers as usize],
            in_flight: cfg
                .wait_for_walks
                .then(|| WalksInFlight::new(cfg.walkers as usize)),
            walk_trip: 0,
            entry: cfg.walker_entry.level(),
            plan: WalkPlan::default(),
            counters: MmuCounters::default(),
            walk_refs: WalkRefStats::default(),
            walk_notes: Vec::new(),
        }
    }

    pub fn scheme(&self) -> &S {
        &self.scheme
    }

    /// Walk at walkers `trip` cycles away (an IOMMU's, `mmu.walker_sharing`).
    pub fn set_walk_trip(&mut self, trip: u64) {
        self.walk_trip = trip;
    }

    /// Exchange the walkers' busy-until cycles with `walkers`: a system whose cores share an
    /// IOMMU's walkers lends them to the core it steps, and takes them back after.
    pub fn swap_walkers(&mut self, walkers: &mut Vec<u64>) {
        std::mem::swap(&mut self.walker_free_at, walkers);
    }

    fn l1_of(&mut self, op: Op) -> &mut TlbLevel {
        if op == Op::Ifetch {
            &mut self.itlb
        } else {
            &mut self.l1
        }
    }

    /// What [`Mmu::translate`] gives an access of kind `op`, issued at cycle `now` or later,
    /// to the page its L1 TLB found last (the next access of a stream, most accesses of most
    /// programs): that TLB's repeated hit, not counted yet ([`Mmu::count_repeat`]). `None`
    /// says only that it must `translate` (as it must while the walk of the page may not have
    /// replied yet).
    #[inline(always)]
    pub fn repeat(&mut self, va: VirtAddr, pid: u16, op: Op, now: u64) -> Option<Translation> {
        if S::PERFECT
            || self
                .in_flight
                .as_ref()
                .is_some_and(|w| w.wait(pid, va, now) > 0)
        {
            return None;
        }
        let l1 = self.l1_of(op);
        let (pfn, size) = l1.repeat(va, pid)?;
        Some(Translation {
            paddr: translate(va, pfn, size),
            size,
            latency: l1.latency,
            found: Found::L1,
        })
    }

    /// Count the translation [`Mmu::repeat`] gave an access of kind `op`, as `translate`
    /// counts it, `n` times.
    #[inline(always)]
    pub fn count_repeat(&mut self, op: Op, n: u64) {
        self.counters.translations += n;
        self.l1_of(op).count_repeat(n);
    }

    /// Translate `va` of process `pid` for an access of kind `op` issued at cycle `now`.
    /// Inlined into the reference loop even though fast-forwarding calls it too.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn translate<P: PageTables<Table = S::Table>>(
        &mut self,
        va: VirtAddr,
        pid: u16,
        op: Op,
        now: u64,
        tables: &P,
        mem: &mut Hierarchy,
        shared: &mut S::Shared,
    ) -> Result<Outcome> {
        self.counters.translations += 1;
        let asid = pid;
        let l1 = self.l1_of(op);
        let mut latency = l1.latency;
        let l1_latency = latency;
        if S::PERFECT {
            return Ok(match tables.truth(pid, va) {
                Some((pfn, size)) => Outcome::Done(Translation {
                    paddr: translate(va, pfn, size),
                    size,
                    latency,
                    found: Found::L1,
                }),
                None => Outcome::Fault(FaultRequest {
                    va,
                    pid,
                    op,
                    issued: now,
                    slot: usize::MAX,
                    walked: now + latency,
                    before_walk: latency,
                    host: None,
                }),
            });
        }
        if let Some((pfn, size)) = l1.lookup(va, asid) {
            let t = Translation {
                paddr: translate(va, pfn, size),
                size,
                latency,
                found: Found::L1,
            };
            return Ok(self.cached(t, va, pid, now));
        }
        self.counters.l1_misses += 1;
        let l2_latency = self.l2.latency;
        let l2_hit = self.l2.lookup(va, asid);
        let (side, side_latency) = self.scheme.side_lookup(
            va,
            asid,
            l2_hit.is_some(),
            now + latency,
            tables,
            mem,
            shared,
        );
        // The first to answer serves the translation (`MmuScheme::side_lookup`).
        let hit = match (l2_hit, side) {
            (_, Some(s)) if l2_hit.is_none() || s.latency < l2_latency => {
                Some((s.pfn, s.size, s.latency, Found::Side))
            }
            (Some((pfn, size)), _) => Some((pfn, size, l2_latency, Found::L2)),
            (None, _) => None,
        };
        if let Some((pfn, size, lat, found)) = hit {
            latency += lat;
            self.counters.translation_cycles += lat;
            self.fill_side_hit(va, asid, op, found, pfn, size);
            let t = Translation {
                paddr: translate(va, pfn, size),
                size,
                latency,
                found,
            };
            return Ok(self.cached(t, va, pid, now));
        }
        latency += l2_latency.max(side_latency);
        self.counters.l2_misses += 1;
        let (l3_hit, l3_latency) = self.scheme.l3_lookup(va, asid, now + latency, mem, shared);
        latency += l3_latency;
        if let Some(h) = l3_hit {
            self.counters.translation_cycles += latency - l1_latency;
            self.fill(va, asid, op, h.pfn, h.size);
            let t = Translation {
                paddr: translate(va, h.pfn, h.size),
                size: h.size,
                latency,
                found: Found::L3,
            };
            return Ok(self.cached(t, va, pid, now));
        }
        // The earliest-free walker takes the walk.
        let (slot, &free_at) = self
            .walker_free_at
            .iter()
            .enumerate()
            .min_by_key(|(_, &t)| t)
            .expect("at least one walker (validated)");
        // The request reaches the walkers (an IOMMU's may be a trip away), waits for one,
        // and the reply travels back.
        let trip = self.walk_trip;
        let ready = now + latency + trip;
        let start = ready.max(free_at);
        self.counters.walker_queue_cycles += start - ready;
        let table = tables.table(pid)?;
        let dram_before = self.walk_refs.by_level[Level::Dram as usize];
        let (found, end) = self.walk_once(va, asid, table, tables, start, mem);
        // Walk or failed walk (a fault's handler is not counted): until the reply is back.
        self.counters.translation_cycles += end + trip - (now + l1_latency);
        match found {
            Some((pfn, size)) => {
                if S::NOTES_WALKS {
                    let dram = self.walk_refs.by_level[Level::Dram as usize] - dram_before;
                    self.walk_notes.push(WalkNote {
                        pid,
                        vpn: va.vpn(),
                        dram_refs: dram as u32,
                    });
                }
                self.walk_found(
                    slot,
                    va,
                    asid,
                    op,
                    (pfn, size),
                    (table, tables.store()),
                    (end, trip),
                    mem,
                    shared,
                );
                Ok(Outcome::Done(Translation {
                    paddr: translate(va, pfn, size),
                    size,
                    latency: end + trip - now,
                    found: Found::Walk,
                }))
            }
            None => Ok(Outcome::Fault(FaultRequest {
                va,
                pid,
                op,
                issued: now,
                slot,
                walked: end + trip,
                before_walk: latency,
                host: self.plan.host_fault,
            })),
        }
    }

    /// Translation `t` of `va` (process `pid`) that a TLB or a side path found for an access
    /// issued at `now`: with `mmu.wait_for_walks`, not before the reply of the walk that
    /// filled the entry, if that walk is still in flight.
    #[inline(always)]
    fn cached(&mut self, mut t: Translation, va: VirtAddr, pid: u16, now: u64) -> Outcome {
        if let Some(w) = &self.in_flight {
            let waited = w.wait(pid, va, now + t.latency);
            if waited > 0 {
                t.latency += waited;
                self.counters.walk_waits += 1;
                self.counters.walk_wait_cycles += waited;
            }
        }
        Outcome::Done(t)
    }

    /// One walk starting at cycle `start`: returns its result and the cycle it ended.
    fn walk_once<P: PageTables<Table = S::Table>>(
        &mut self,
        va: VirtAddr,
        asid: u16,
        table: &S::Table,
        tables: &P,
        start: u64,
        mem: &mut Hierarchy,
    ) -> (Option<(Pfn, PageSize)>, u64) {
        let mut env = WalkEnv {
            table,
            store: tables.store(),
            host: tables.host(),
            segment: tables.segment(asid),
            l2tlb: &mut self.l2,
        };
        let found = self.scheme.plan_walk(va, asid, &mut env, &mut self.plan);
        let lat = self
            .plan
            .execute(mem, start, self.entry, &mut self.walk_refs);
        self.counters.walks += 1;
        self.counters.walk_cycles += lat;
        (found, start + lat)
    }

    /// A walk on walker `slot` found `(pfn, size)` for `va` in `table`, ending at cycle `end`
    /// and replying to the core `back` cycles later: the walker is free again, the scheme
    /// fills its own structures, and the L2 and L1 TLBs take the translation.
    #[allow(clippy::too_many_arguments)]
    fn walk_found(
        &mut self,
        slot: usize,
        va: VirtAddr,
        asid: u16,
        op: Op,
        (pfn, size): (Pfn, PageSize),
        (table, store): (&S::Table, &PtStore),
        (end, back): (u64, u64),
        mem: &mut Hierarchy,
        shared: &mut S::Shared,
    ) {
        self.walker_free_at[slot] = end;
        if let Some(w) = &mut self.in_flight {
            w.note(asid, va, size, end + back);
        }
        self.scheme
            .after_walk(va, asid, pfn, size, table, store, end, mem, shared);
        self.fill(va, asid, op, pfn, size);
    }

    /// Fill the TLBs with a translation the L2 TLB or a side path found.
    fn fill_side_hit(
        &mut self,
        va: VirtAddr,
        asid: u16,
        op: Op,
        found: Found,
        pfn: Pfn,
        size: PageSize,
    ) {
        if S::SIDE_HITS_FILL_L2 && found == Found::Side {
            self.l2.fill(va, asid, pfn, size);
        }
        self.l1_of(op).fill(va, asid, pfn, size);
    }

    fn fill(&mut self, va: VirtAddr, asid: u16, op: Op, pfn: Pfn, size: PageSize) {
        self.l2.fill(va, asid, pfn, size);
        self.l1_of(op).fill(va, asid, pfn, size);
    }

    /// Complete a faulting translation after the OS mapped the page. The handler started
    /// once every older instruction retired (`older_retired`) and took `fault_cycles`; the
    /// instruction then walks again (a perfect TLB reads the new mapping directly).
    pub fn finish_fault<P: PageTables<Table = S::Table>>(
        &mut self,
        f: FaultRequest,
        older_retired: u64,
        fault_cycles: u64,
        tables: &P,
        mem: &mut Hierarchy,
        shared: &mut S::Shared,
    ) -> Result<Translation> {
        self.counters.faults += 1;
        let resume = f.walked.max(older_retired) + fault_cycles;
        let asid = f.pid;
        let fail = || {
            Error::Verify(format!(
                "walk for {:?} (pid {}) found no mapping right after the OS mapped it",
                f.va, f.pid
            ))
        };
        if S::PERFECT {
            let (pfn, size) = tables.truth(f.pid, f.va).ok_or_else(fail)?;
            return Ok(Translation {
                paddr: translate(f.va, pfn, size),
                size,
                latency: resume + f.before_walk - f.issued,
                found: Found::Fault { resume },
            });
        }
        // The side paths may hold the new page (Utopia allocates in a RestSeg at the fault,
        // and only the RestSeg walk finds it there); otherwise the walk does. The walk starts
        // at `resume` either way, as it did before side paths existed.
        if let (Some(hit), latency) = self
            .scheme
            .side_lookup_after_fault(f.va, asid, resume, tables, mem, shared)
        {
            self.counters.translation_cycles += latency;
            self.fill_side_hit(f.va, asid, f.op, Found::Side, hit.pfn, hit.size);
            return Ok(Translation {
                paddr: translate(f.va, hit.pfn, hit.size),
                size: hit.size,
                latency: resume + latency - f.issued,
                found: Found::Fault { resume },
            });
        }
        let table = tables.table(f.pid)?;
        let trip = self.walk_trip;
        let (found, end) = self.walk_once(f.va, asid, table, tables, resume + trip, mem);
        self.counters.translation_cycles += end + trip - resume;
        let mapping = found.ok_or_else(fail)?;
        Ok(self.fault_walked(
            &f,
            mapping,
            (table, tables.store()),
            (end, trip),
            Found::Fault { resume },
            mem,
            shared,
        ))
    }

    /// The translation of fault `f`, which a walk ending at `end` found mapped to
    /// `(pfn, size)`: its walker is busy until then and the TLBs take the mapping; the reply
    /// reaches the core `back` cycles later.
    #[allow(clippy::too_many_arguments)]
    fn fault_walked(
        &mut self,
        f: &FaultRequest,
        (pfn, size): (Pfn, PageSize),
        table: (&S::Table, &PtStore),
        (end, back): (u64, u64),
        found: Found,
        mem: &mut Hierarchy,
        shared: &mut S::Shared,
    ) -> Translation {
        self.walk_found(
            f.slot,
            f.va,
            f.pid,
            f.op,
            (pfn, size),
            table,
            (end, back),
            mem,
            shared,
        );
        Translation {
            paddr: translate(f.va, pfn, size),
            size,
            latency: end + back - f.issued,
            found,
        }
    }

    /// Complete a faulting translation in the walk that found the page unmapped
    /// (`os.fault_model = "walk_penalty"`): the OS has mapped it (`mapped`) with `penalty`
    /// cycles, which the walk takes on, then reads the entries the fault made at addresses of
    /// their own ([`PageTable::entries_made`]); its walker is busy until then, and the TLBs
    /// take the translation read from the table (the OS's mapping where the organisation
    /// offers no such read).
    #[allow(clippy::too_many_arguments)]
    pub fn finish_fault_in_walk<P: PageTables<Table = S::Table>>(
        &mut self,
        f: FaultRequest,
        penalty: u64,
        mapped: (Pfn, PageSize),
        tables: &P,
        mem: &mut Hierarchy,
        shared: &mut S::Shared,
    ) -> Result<Translation> {
        self.counters.faults += 1;
        let table = tables.table(f.pid)?;
        // As ChampSim's walker does, the walk reads each entry the fault made where it was
        // made (`placement = "champsim"`: a new frame, which no cache holds), one after
        // another, once the penalty for making it is paid.
        self.plan.clear();
        for &(at, level) in table.entries_made() {
            self.plan
                .push_next(at, crate::mem::kind::MemKind::pt_level(level));
        }
        let reads = self
            .plan
            .execute(mem, f.walked + penalty, self.entry, &mut self.walk_refs);
        self.counters.walk_cycles += reads;
        let end = f.walked + penalty + reads;
        let (pfn, size) = match table.read_mapping(tables.store(), f.va) {
            Some(Some(m)) => m,
            Some(None) => {
                return Err(Error::Verify(format!(
                    "the table has no mapping for {:?} (pid {}) right after the OS mapped it",
                    f.va, f.pid
                )))
            }
            None => mapped,
        };
        if S::PERFECT {
            return Ok(Translation {
                paddr: translate(f.va, pfn, size),
                size,
                latency: end - f.issued,
                found: Found::Walk,
            });
        }
        self.counters.translation_cycles += penalty;
        Ok(self.fault_walked(
            &f,
            (pfn, size),
            (table, tables.store()),
            (end, 0),
            Found::Walk,
            mem,
            shared,
        ))
    }

    /// Drop every cached translation of the given pages (after munmap or migration).
    pub fn shootdown(&mut self, pid: u16, pages: &[(Vpn, PageSize)], shared: &mut S::Shared) {
        if S::PERFECT {
            return; // a perfect TLB caches nothing
        }
        self.counters.shootdowns += 1;
        for &(vpn, size) in pages {
            for level in [&mut self.itlb, &mut self.l1, &mut self.l2] {
                level.invalidate_page(vpn, size, pid);
            }
            self.scheme.invalidate(vpn, size, pid, shared);
        }
        // Table pages are never freed, so PWC entries stay valid; flush anyway, as Linux does
        // when it tears down mappings, so no walk can start from stale state.
        self.scheme.flush();
    }

    pub fn reset_stats(&mut self) {
        self.itlb.reset_stats();
        self.l1.reset_stats();
        self.l2.reset_stats();
        self.scheme.reset_stats();
        self.counters = MmuCounters::default();
        self.walk_refs = WalkRefStats::default();
    }

    pub fn snapshot(&self) -> MmuSnapshot {
        MmuSnapshot {
            itlb: self.itlb.stats,
            l1tlb: self.l1.snapshot(),
            l2tlb: self.l2.snapshot(),
            scheme: self.scheme.stats(),
            counters: self.counters.clone(),
        }
    }
}

/// The `mmu` stats subtree.
#[derive(Clone, Debug, Serialize)]
pub struct MmuSnapshot {
    pub itlb: TlbStats,
    pub l1tlb: TlbLevelSnapshot,
    pub l2tlb: TlbLevelSnapshot,
    /// The scheme's own structures (`pwc`, `cwc`, `range_tlb`, `pom_tlb`...).
    #[serde(flatten)]
    pub scheme: BTreeMap<&'static str, serde_json::Value>,
    #[serde(flatten)]
    pub counters: MmuCounters,
}

impl MmuSnapshot {
    /// Add another core's counters to these (the system's totals over its cores).
    pub fn merge(&mut self, other: &MmuSnapshot) {
        self.itlb.add(&other.itlb);
        self.l1tlb.merge(&other.l1tlb);
        self.l2tlb.merge(&other.l2tlb);
        for (name, v) in &other.scheme {
            match self.scheme.get_mut(name) {
                Some(mine) => add_json(mine, v),
                None => {
                    self.scheme.insert(name, v.clone());
                }
            }
        }
        self.counters.merge(&other.counters);
    }
}

impl MmuCounters {
    fn merge(&mut self, o: &MmuCounters) {
        self.translations += o.translations;
        self.l1_misses += o.l1_misses;
        self.l2_misses += o.l2_misses;
        self.walks += o.walks;
        self.walk_cycles += o.walk_cycles;
        self.walker_queue_cycles += o.walker_queue_cycles;
        self.translation_cycles += o.translation_cycles;
        self.faults += o.faults;
        self.shootdowns += o.shootdowns;
        self.walk_waits += o.walk_waits;
        self.walk_wait_cycles += o.walk_wait_cycles;
    }
}

impl TlbLevelSnapshot {
    fn merge(&mut self, other: &TlbLevelSnapshot) {
        self.total.add(&other.total);
        for (name, s) in &other.arrays {
            self.arrays.entry(name.clone()).or_default().add(s);
        }
    }
}

/// Add the numbers of `other` into `into`, key by key: how a scheme's counters (any shape)
/// sum over cores. Integers stay integers.
fn add_json(into: &mut serde_json::Value, other: &serde_json::Value) {
    use serde_json::Value;
    match (into, other) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(mine) => add_json(mine, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                add_json(x, y);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            *a = match (a.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => (x + y).into(),
                _ => serde_json::Number::from_f64(
                    a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0),
                )
                .unwrap_or_else(|| 0.into()),
            };
        }
        _ => {}
    }
}

/// Stats of one TLB level: the level as a whole (`accesses`, `hits`, `misses`) and each array
/// (`<name>.hits` = translations it supplied; it was probed `accesses` times).
#[derive(Clone, Debug, Serialize)]
pub struct TlbLevelSnapshot {
    #[serde(flatten)]
    pub total: TlbStats,
    #[serde(flatten)]
    pub arrays: BTreeMap<String, TlbStats>,
}

/// What unit tests of a scheme's stages hand them as the OS: one process's table.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    pub struct OneTable<'a, T> {
        pub table: &'a T,
        pub store: &'a PtStore,
    }

    impl<T: PageTable> PageTables for OneTable<'_, T> {
        type Table = T;
        fn table(&self, _pid: u16) -> Result<&T> {
            Ok(self.table)
        }
        fn store(&self) -> &PtStore {
            self.store
        }
        fn truth(&self, _pid: u16, _va: VirtAddr) -> Option<(Pfn, PageSize)> {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_waits_for_the_walk_of_its_own_page_only() {
        let mut w = WalksInFlight::new(2);
        w.note(1, VirtAddr(0x5000_1234), PageSize::Size4K, 500);
        w.note(1, VirtAddr(0x4020_0000), PageSize::Size2M, 300);
        // Its page, before the reply: until the reply.
        assert_eq!(w.wait(1, VirtAddr(0x5000_1ff8), 120), 380);
        assert_eq!(w.wait(1, VirtAddr(0x403f_fff8), 100), 200);
        // After the reply, another page, another address space: no wait.
        assert_eq!(w.wait(1, VirtAddr(0x5000_1000), 500), 0);
        assert_eq!(w.wait(1, VirtAddr(0x5000_2000), 100), 0);
        assert_eq!(w.wait(2, VirtAddr(0x5000_1000), 100), 0);
        // A third walk takes the oldest's slot (two walkers: no more in flight at once).
        w.note(1, VirtAddr(0x7000_0000), PageSize::Size4K, 900);
        assert_eq!(w.wait(1, VirtAddr(0x5000_1000), 100), 0);
        assert_eq!(w.wait(1, VirtAddr(0x4020_0000), 100), 200);
        assert_eq!(w.latest, 900);
    }
}
