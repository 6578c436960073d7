//! One system of a scheme `S`: its cores (each with its core model, MMU, L1D and L2), the
//! shared LLC and DRAM, and its OS, running the reference loop (docs/architecture.md, "one
//! reference", "multi-core stepping"). Everything here is generic over the scheme, so the
//! loop is compiled once per scheme with no virtual calls.
//!
//! With several cores, records are routed to core `record.core % cores` and wait in that
//! core's queue (a mix's programs are read by their own cores instead: `programs.rs`); the core whose clock ([`Core::now`]) is smallest steps next (ties: the lowest
//! core), which is deterministic and keeps the cores' clocks close, so their accesses
//! interleave in the shared caches and DRAM as they would in time.
//!
//! A record flagged [`Record::AFTER_BARRIER`] is held back, with everything after it, until
//! every record before it has run; then the cores that run its process meet at the barrier
//! (each waits until the last of them has retired its work) and distribution resumes.

mod fast_forward;
mod programs;

use super::{RunTiming, SimConfig};
use crate::addr::{PageSize, Pfn, PhysAddr, Vpn, BASE_PAGE_SHIFT, LINE_SHIFT};
use crate::core::Core;
use crate::error::{Error, Result};
use crate::mem::topology::Topology;
use crate::mem::{Hierarchy, Level, MemKind, Timing};
use crate::mmu::{
    FaultRequest, Found, Mmu, MmuScheme, MmuSnapshot, Outcome, PageTables, Translation,
};
use crate::os::{AddressSpaces, Os};
use crate::profile::{ProfileSnapshot, TlbProfile};
use crate::pt::store::{Prefetch, PtStore};
use crate::pt::{PtContext, TableScan};
use crate::schemes::{BuildCtx, Scheme, TableOf};
use crate::stats::{
    CachesSnapshot, CoreSnapshot, EpochSample, FastForwardSnapshot, PerCoreSnapshot,
    PrivateCachesSnapshot, Stats, Summary, SystemSnapshot, VerifySnapshot, WalkSnapshot,
};
use crate::trace::{Op, Record, RecordSource, BATCH};
use programs::ProgramRun;
use std::collections::VecDeque;

/// Instructions per cycle (0 before the first cycle).
fn ipc(instructions: u64, cycles: u64) -> f64 {
    if cycles == 0 {
        0.0
    } else {
        instructions as f64 / cycles as f64
    }
}

/// The parts of scheme `S` its cores' MMUs share.
pub type SharedOf<S> = <<S as Scheme>::Mmu as MmuScheme>::Shared;

/// Records a multi-core system may hold in its cores' queues before it stops reading ahead
/// for a core that has none (a core that never gets records must not make the others buffer
/// the whole source): 2 Mi records (48 MiB). A `mix` on several cores does not queue: each
/// core reads its own program (`programs.rs`).
const MAX_QUEUED: usize = 1 << 21;

/// One core of a system: its timing model, its MMU, the records waiting for it, and the
/// processes it has run (the cores a shootdown must reach).
pub struct CoreUnit<S: Scheme> {
    pub core: Core,
    pub mmu: Mmu<S::Mmu>,
    queue: VecDeque<Record>,
    ran: Vec<u16>,
    /// Instructions and cycles at the end of warm-up (subtracted from the totals).
    base_instructions: u64,
    base_cycles: u64,
}

impl<S: Scheme> CoreUnit<S> {
    fn instructions(&self) -> u64 {
        self.core.instructions() - self.base_instructions
    }

    fn cycles(&self) -> u64 {
        self.core.cycles() - self.base_cycles
    }

    fn has_run(&self, pid: u16) -> bool {
        self.ran.contains(&pid)
    }

    /// This core runs `pid`: a shootdown of the process must reach it from now on.
    fn runs(&mut self, pid: u16) {
        if !self.has_run(pid) {
            self.ran.push(pid);
        }
    }
}

/// Shootdowns that crossed cores.
#[derive(Clone, Copy, Debug, Default)]
struct IpiCounters {
    /// Shootdowns that reached at least one other core.
    shootdowns: u64,
    /// IPIs sent (one per other core reached).
    ipis: u64,
    /// Cycles charged for them (initiators waiting plus handlers on the other cores).
    cycles: u64,
}

/// Barriers the cores met at.
#[derive(Clone, Copy, Debug, Default)]
struct BarrierCounters {
    barriers: u64,
    /// Cycles cores waited at them, over all cores.
    wait_cycles: u64,
}

pub struct System<S: Scheme> {
    cfg: SimConfig,
    pub os: Os<TableOf<S>>,
    pub cores: Vec<CoreUnit<S>>,
    pub mem: Hierarchy,
    /// The parts of the scheme every core's MMU shares (a POM-TLB).
    pub shared: SharedOf<S>,
    source: Box<dyn RecordSource>,
    /// The programs of a multi-programmed source, each read by its own core (empty when
    /// the records come from `source` alone): see `programs.rs`.
    programs: Vec<ProgramRun>,
    /// Instructions retired by all cores since boot.
    instructions: u64,
    /// The instruction count at which warm-up ends, an epoch is sampled or the run stops.
    next_event: u64,
    warm: bool,
    next_epoch: u64,
    epochs: Vec<EpochSample>,
    verified: u64,
    /// `sim.verify_inject_after`: the number of checked translations after which the next
    /// translated page's entries are corrupted (`u64::MAX`: off, or done).
    inject_at: u64,
    /// The page corrupted on purpose, once it is (the check's message says so).
    injected: Option<(u16, Vpn)>,
    ipi: IpiCounters,
    barriers: BarrierCounters,
    /// What the run skipped functionally before the detailed simulation.
    skipped: FastForwardSnapshot,
    /// Running functionally: shootdowns reach the TLBs but cost nothing.
    fast_forwarding: bool,
    /// `sim.timing = "translation"`: every record runs as fast-forward's warming runs it
    /// (translated, faults handled, nothing timed), and is counted.
    translation_only: bool,
    /// `cache.l1d.addressing = "virtual"`: an access whose line the L1D holds is served
    /// before, and without, translation ([`System::virtual_hit`]).
    virtual_l1d: bool,
    /// `mmu.walker_sharing` other than `core`: the IOMMUs' walkers (busy-until cycles), and
    /// each core's IOMMU; empty when every core walks with its own walkers.
    iommus: Vec<Vec<u64>>,
    iommu_of_core: Vec<usize>,
    /// `[profile.tlb]`: the data references' pages, counted for many TLB geometries.
    profile: Option<TlbProfile>,
    /// The fast-forward's clock: each record starts when the one before it was translated
    /// (in order, every access free), so whatever a translation fills with a ready time —
    /// walkers, the range TLB — is ready for the records after it.
    ff_clock: u64,
}

/// How many records ahead of the one stepping the run loop prefetches walks' entries (and
/// twice as many, their frames' index entries): far enough for the host's memory to answer,
/// near enough for the lines to still be cached.
const PREFETCH_AHEAD: usize = 8;

/// Whether the page of `buf[j]` is that of one of the three records before it: its walk,
/// if any, has been prefetched (a record on the same page as a recent one mostly hits the TLB;
/// prefetching for every record of a sequential stream cost more than the walks it helped).
#[inline(always)]
fn page_recurs(buf: &[Record], j: usize) -> bool {
    let page = |r: &Record| (r.vaddr.0 >> 12, r.pid);
    let p = page(&buf[j]);
    buf[j.saturating_sub(3)..j].iter().any(|r| page(r) == p)
}

/// Whether `buf[j]` exists and is on a fresh page (see [`page_recurs`]): one to prefetch.
#[inline(always)]
fn fresh_page(buf: &[Record], j: usize) -> bool {
    j < buf.len() && !page_recurs(buf, j)
}

/// The OS as the MMU reads it.
impl<T: crate::pt::PageTable> PageTables for Os<T> {
    type Table = T;
    #[inline]
    fn table(&self, pid: u16) -> Result<&T> {
        Ok(&self.process(pid)?.pt)
    }
    #[inline]
    fn store(&self) -> &PtStore {
        &self.store
    }
    #[inline]
    fn truth(
        &self,
        pid: u16,
        va: crate::addr::VirtAddr,
    ) -> Option<(crate::addr::Pfn, crate::addr::PageSize)> {
        Os::truth(self, pid, va)
    }
    #[inline]
    fn host(&self) -> Option<&crate::pt::host::HostTable> {
        Os::host(self)
    }
    #[inline]
    fn segment(&self, pid: u16) -> Option<&crate::pt::direct::DirectSegment> {
        self.process(pid).ok()?.segment.as_ref()
    }
}

/// What a scheme's builders see of `cfg`.
/// The first frame of the page a translation found.
#[inline]
fn page_frame(t: &Translation) -> Pfn {
    Pfn(t.paddr.pfn().0 & !(t.size.base_pages() - 1))
}

/// The IOMMUs of `mmu.walker_sharing` for `n` cores: each one's walkers (all free), each
/// core's IOMMU, and each core's cycles one way to it (an IOMMU sits on its socket, or on
/// socket 0 for the whole system). All empty when each core has its own walkers.
fn iommus(cfg: &SimConfig, n: usize) -> (Vec<Vec<u64>>, Vec<usize>, Vec<u64>) {
    use crate::mmu::config::WalkerSharing;
    let sharing = cfg.mmu.walker_sharing;
    if sharing == WalkerSharing::Core {
        return (Vec::new(), Vec::new(), Vec::new());
    }
    let topology = (!cfg.topology.is_flat())
        .then(|| Topology::new(&cfg.topology, cfg.dram.channels, cfg.core.frequency_ghz));
    let socket = |c: usize| topology.as_ref().map_or(0, |t| t.socket_of_core(c));
    let sockets = topology.as_ref().map_or(1, Topology::sockets) as usize;
    let (count, of_core): (usize, Vec<usize>) = match sharing {
        WalkerSharing::Socket => (sockets, (0..n).map(|c| socket(c) as usize).collect()),
        _ => (1, vec![0; n]),
    };
    let trips = (0..n)
        .map(|c| {
            let home = if sharing == WalkerSharing::Socket {
                socket(c)
            } else {
                0
            };
            topology
                .as_ref()
                .map_or(0, |t| t.socket_one_way(socket(c), home))
        })
        .collect();
    let walkers = vec![vec![0; cfg.mmu.walkers as usize]; count];
    (walkers, of_core, trips)
}

fn build_ctx(cfg: &SimConfig) -> BuildCtx<'_> {
    BuildCtx {
        sections: &cfg.schemes,
        mmu: &cfg.mmu,
        seed: cfg.seed,
        physmem_bytes: cfg.os.physmem.bytes,
        dram: &cfg.dram,
        topology: &cfg.topology,
    }
}

/// Boot the OS of `cfg` for scheme `S`: physical memory, and the scheme's page-table
/// organisation and frame policy.
pub fn boot_os<S: Scheme>(cfg: &SimConfig) -> Result<Os<TableOf<S>>> {
    // The OS builds each new process's table later, so the closure keeps its own config.
    let own = cfg.clone();
    let new_table =
        Box::new(move |pt: &mut PtContext, pid| S::new_table(&build_ctx(&own), pt, pid));
    let ctx = build_ctx(cfg);
    let frames = S::frames(&ctx)?;
    let vmm = S::vmm(&ctx)?;
    // The config's host-memory check counted the VMM's memory by this flag.
    debug_assert_eq!(
        vmm.is_some(),
        S::VIRTUALIZED,
        "Scheme::VIRTUALIZED of {}",
        cfg.scheme
    );
    Os::new(&cfg.os, cfg.seed, new_table, frames, vmm)
}

impl<S: Scheme> System<S> {
    /// Build the system of `cfg` with records from `make_source`, which may create processes
    /// and mappings in the OS first.
    pub fn new(
        cfg: SimConfig,
        make_source: impl FnOnce(&mut dyn AddressSpaces) -> Result<Box<dyn RecordSource>>,
    ) -> Result<System<S>> {
        let mut os = boot_os::<S>(&cfg)?;
        let mut source = make_source(&mut os)?;
        let ctx = build_ctx(&cfg);
        let n = cfg.sim.cores as usize;
        // A mix on several cores: each program on its own (one core time-slices the
        // interleaved stream instead).
        let programs = if n > 1 { source.programs() } else { Vec::new() };
        if programs.len() > n {
            return Err(Error::config(
                "sim.cores",
                format!(
                    "{n} cores for {} programs: a mix runs one program per core, or all of \
                     them on one core",
                    programs.len()
                ),
            ));
        }
        let translation_only = cfg.sim.timing == RunTiming::Translation;
        if translation_only && !programs.is_empty() {
            return Err(Error::config(
                "sim.timing",
                "\"translation\" runs a mix's programs interleaved on one core: set \
                 sim.cores = 1 (a core per program needs the timing model to interleave them)",
            ));
        }
        let programs = ProgramRun::all(programs, &cfg.sim);
        let inject_after = cfg.sim.verify_inject_after;
        if inject_after > 0 && <S::Mmu as MmuScheme>::PERFECT {
            return Err(Error::config(
                "sim.verify_inject_after",
                format!(
                    "scheme `{}` translates from the OS's own mapping: it has no structure \
                     to corrupt",
                    cfg.scheme
                ),
            ));
        }
        let shared = S::shared(&ctx, &mut os.buddy)?;
        let (iommus, iommu_of_core, trips) = iommus(&cfg, n);
        let mut cores = Vec::with_capacity(n);
        for c in 0..n {
            let mut mmu = Mmu::new(&cfg.mmu, S::mmu(&ctx)?);
            mmu.set_walk_trip(trips.get(c).copied().unwrap_or(0));
            cores.push(CoreUnit {
                core: Core::new(&cfg.core),
                mmu,
                queue: VecDeque::new(),
                ran: Vec::new(),
                base_instructions: 0,
                base_cycles: 0,
            });
        }
        let mut mem = Hierarchy::new(&cfg.cache, &cfg.dram, cfg.core.frequency_ghz, n);
        if !cfg.topology.is_flat() {
            mem.set_topology(Topology::new(
                &cfg.topology,
                cfg.dram.channels,
                cfg.core.frequency_ghz,
            ));
        }
        if translation_only {
            mem.set_timing(Timing::Untouched);
        }
        Ok(System {
            mem,
            translation_only,
            virtual_l1d: !cfg.cache.l1d.addressing.is_physical(),
            iommus,
            iommu_of_core,
            profile: TlbProfile::new(&cfg.profile.tlb),
            cores,
            shared,
            os,
            source,
            programs,
            instructions: 0,
            next_event: 0,
            warm: cfg.sim.warmup_instructions == 0,
            next_epoch: cfg.sim.epoch_instructions,
            epochs: Vec::new(),
            verified: 0,
            inject_at: if inject_after > 0 {
                inject_after
            } else {
                u64::MAX
            },
            injected: None,
            ipi: IpiCounters::default(),
            barriers: BarrierCounters::default(),
            skipped: FastForwardSnapshot::default(),
            fast_forwarding: false,
            ff_clock: 0,
            cfg,
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Simulate one record on the core it names.
    #[inline]
    pub fn step(&mut self, rec: &Record) -> Result<()> {
        let c = rec.core as usize % self.cores.len();
        self.step_on(c, rec)
    }

    /// Have the host cache what the walk of `rec`, a few records ahead, will read (see
    /// [`PageTable::prefetch`](crate::pt::PageTable::prefetch)): a
    /// hint that changes nothing simulated.
    #[inline]
    fn prefetch(&self, rec: &Record, what: Prefetch) {
        use crate::pt::PageTable;
        if let Ok(table) = self.os.table(rec.pid) {
            table.prefetch(self.os.store(), rec.vaddr, what);
        }
    }

    /// How the hierarchy times accesses in the measured run (`sim.timing`).
    fn run_timing(&self) -> Timing {
        if self.translation_only {
            Timing::Untouched
        } else {
            Timing::Detailed
        }
    }

    /// Whether nothing takes time: fast-forwarding, or a translation-only run. Shootdowns
    /// reach the TLBs at no cost, the OS's page copies and table scans do not run through
    /// the caches.
    #[inline]
    fn functional(&self) -> bool {
        self.fast_forwarding || self.translation_only
    }

    /// Count a data reference to `rec`'s page in the TLB profile, if there is one.
    #[inline(always)]
    fn profile_reference(&mut self, rec: &Record, faulted: bool) {
        if let Some(p) = &mut self.profile {
            if rec.op != Op::Ifetch {
                p.reference(rec.pid, rec.vaddr.0 >> BASE_PAGE_SHIFT, faulted);
            }
        }
    }

    /// Have the host cache what the TLB profile will read for `rec`, a few records ahead.
    #[inline(always)]
    fn prefetch_profile(&self, rec: &Record) {
        if let Some(p) = &self.profile {
            if rec.op != Op::Ifetch {
                p.prefetch(rec.pid, rec.vaddr.0 >> BASE_PAGE_SHIFT);
            }
        }
    }

    /// Simulate one record on core `c`.
    #[inline]
    fn step_on(&mut self, c: usize, rec: &Record) -> Result<()> {
        if self.translation_only {
            return self.step_untimed(c, rec);
        }
        self.mem.set_core(c);
        let unit = &mut self.cores[c];
        let before = unit.core.instructions();
        let store = rec.op == Op::Store;
        let issue = unit.core.dispatch_record(
            rec.instr_delta,
            rec.dep,
            rec.core,
            store,
            rec.joins_previous(),
        );
        self.mem.core_clock(c, unit.core.now());
        if self.verified >= self.inject_at {
            self.inject(rec);
        }
        if let Some(data_latency) = self.virtual_hit(c, rec) {
            let core = &mut self.cores[c].core;
            core.complete_access(issue, data_latency, store);
            self.instructions += core.instructions() - before;
            return Ok(());
        }
        self.lend_walkers(c);
        let unit = &mut self.cores[c];
        let (t, faulted) = match unit.mmu.translate(
            rec.vaddr,
            rec.pid,
            rec.op,
            issue,
            &self.os,
            &mut self.mem,
            &mut self.shared,
        )? {
            Outcome::Done(t) => (t, false),
            Outcome::Fault(f) => (self.fault(c, f)?, true),
        };
        self.lend_walkers(c);
        if self.cfg.sim.verify {
            self.verify(rec, t.paddr)?;
        }
        self.profile_reference(rec, faulted);
        if <S::Mmu as MmuScheme>::NOTES_SIDE_HITS && t.found == Found::Side {
            self.os.side_hit(page_frame(&t));
        }
        // Swapping by access time: the page was referenced now.
        self.os.touch(page_frame(&t));
        // The translation is resolved, then the page may move (Utopia §5.5).
        if <S::Mmu as MmuScheme>::NOTES_WALKS && !self.cores[c].mmu.walk_notes.is_empty() {
            let stall = self.deliver_walk_notes(c, issue + t.latency)?;
            if stall > 0 {
                self.cores[c].core.interrupt(stall);
            }
        }
        let data_at = issue + t.latency;
        let data_latency = self.data_access(&t, store, data_at);
        let core = &mut self.cores[c].core;
        core.complete_access(data_at, data_latency, store);
        self.instructions += core.instructions() - before;
        Ok(())
    }

    /// A virtual L1D's lookup of `rec` on core `c`, before translation: if the L1D holds its
    /// line, the hit (counted) and its latency; the access then needs no translation at all.
    /// `None` (nothing changed) if the L1D is physical, the page is unmapped, or the line is
    /// not there.
    ///
    /// The virtual cache is modelled by the physical line the virtual line maps to: with its
    /// set index inside the page offset (validated), the two pick the same set, and while a
    /// page stays mapped, (address space, virtual line) and physical line name each other
    /// one to one (no two processes share a page), so the cache holds and finds exactly the
    /// lines a cache tagged by address space and virtual line would. When a mapping changes,
    /// the lines of the old frame are no longer found by the page's virtual address: the
    /// flush of the page's lines a virtual cache needs at an unmap or a migration.
    #[inline(always)]
    fn virtual_hit(&mut self, c: usize, rec: &Record) -> Option<u64> {
        if !self.virtual_l1d {
            return None;
        }
        let (pfn, size) = self.os.truth(rec.pid, rec.vaddr)?;
        let paddr = crate::addr::translate(rec.vaddr, pfn, size);
        let latency = self
            .mem
            .l1d_probe(c, paddr, MemKind::DATA, rec.op == Op::Store)?;
        // Swapping by access time: the page was referenced now.
        self.os.touch(Pfn(pfn.0 & !(size.base_pages() - 1)));
        Some(latency)
    }

    /// Exchange core `c`'s walkers with its IOMMU's (`mmu.walker_sharing`): called before
    /// and after its translation, it lends the shared walkers to the core for that time.
    #[inline(always)]
    fn lend_walkers(&mut self, c: usize) {
        if let Some(&i) = self.iommu_of_core.get(c) {
            self.cores[c].mmu.swap_walkers(&mut self.iommus[i]);
        }
    }

    /// The data access of translation `t` at cycle `at`: through the L1D, or, when the
    /// scheme's memory-side translation brought the data with it
    /// ([`MmuScheme::DATA_WITH_TRANSLATION`]), read at memory and put in the L1D. Returns
    /// its latency.
    #[inline(always)]
    fn data_access(&mut self, t: &Translation, store: bool, at: u64) -> u64 {
        let at_memory = matches!(t.found, Found::Side | Found::Walk | Found::Fault { .. });
        if <S::Mmu as MmuScheme>::DATA_WITH_TRANSLATION && at_memory {
            return self.mem.read_at_memory(t.paddr, MemKind::DATA, store, at);
        }
        self.mem
            .access(t.paddr, MemKind::DATA, store, at, Level::L1d)
            .0
    }

    /// [`System::step_on`] of `buf[i]` if it is on the page core `c`'s L1 TLB found last and
    /// on a line its L1D found recently, as most records of most programs are: both hits are
    /// counted and change nothing else, so the MMU's and the hierarchy's stages are skipped.
    /// The records after it on the same line (a stream's next words) then hit the same two
    /// entries, with nothing between to change them: they are stepped through the core alone,
    /// their hits counted together at the end. The run stops at the record that reaches the
    /// next event, and before one whose walk the run loop would prefetch (`fresh_pages` is
    /// updated for the records stepped, as the loop would). Returns how many records it
    /// stepped: 0, having done nothing, if `buf[i]` is not such a record, or each translation
    /// is checked.
    #[inline(always)]
    fn step_repeats(&mut self, c: usize, buf: &[Record], i: usize, fresh_pages: &mut u32) -> usize {
        let rec = &buf[i];
        // Mostly, a record repeats the L1 TLB's last page only if it repeats the page of the
        // record before it: the others are not looked at further (a guess that changes no
        // result, only how often the check below is made in vain).
        let page = |r: &Record| (r.vaddr.0 >> BASE_PAGE_SHIFT, r.pid);
        if i == 0 || page(&buf[i - 1]) != page(rec) {
            return 0;
        }
        // A virtual L1D is looked up before the TLB: its hits must not count TLB hits.
        if self.cfg.sim.verify || self.verified >= self.inject_at || self.virtual_l1d {
            return 0;
        }
        let unit = &mut self.cores[c];
        let Some(t) = unit.mmu.repeat(rec.vaddr, rec.pid, rec.op, unit.core.now()) else {
            return 0;
        };
        let store = rec.op == Op::Store;
        let Some(data_latency) = self.mem.l1d_repeat(c, t.paddr, MemKind::DATA, store) else {
            return 0;
        };
        self.mem.set_core(c);
        // The same line, and through the same TLB (an instruction fetch or not).
        let same_line = |r: &Record| {
            r.vaddr.0 >> LINE_SHIFT == rec.vaddr.0 >> LINE_SHIFT
                && r.pid == rec.pid
                && (r.op == Op::Ifetch) == (rec.op == Op::Ifetch)
        };
        // First how far the run goes: the records on the line, up to one whose walk the run
        // loop would prefetch (`fresh_pages` as it would be after each record accepted).
        let mut end = i + 1;
        let mut fresh = *fresh_pages;
        while end < buf.len() && same_line(&buf[end]) {
            let far_fresh = fresh_page(buf, end + 2 * PREFETCH_AHEAD);
            let shifted = fresh << 1 | far_fresh as u32;
            if far_fresh || shifted >> PREFETCH_AHEAD & 1 == 1 {
                break;
            }
            fresh = shifted;
            end += 1;
        }
        // Then step them through the core, up to the next event. The system's instruction
        // count is brought up to date once, after the run.
        let start = unit.core.instructions();
        let event_at = start + self.next_event.saturating_sub(self.instructions);
        let mut writes = false;
        let mut j = i;
        while j < end {
            let r = &buf[j];
            let store = r.op == Op::Store;
            writes |= store;
            let issue =
                unit.core
                    .dispatch_record(r.instr_delta, r.dep, r.core, store, r.joins_previous());
            unit.core
                .complete_access(issue + t.latency, data_latency, store);
            j += 1;
            if unit.core.instructions() >= event_at {
                break;
            }
        }
        // The records accepted but not stepped (the event came first) take their bits back.
        *fresh_pages = fresh >> (end - j);
        self.instructions += unit.core.instructions() - start;
        // The first record's L1D hit is counted already.
        let stepped = (j - i) as u64;
        unit.mmu.count_repeat(rec.op, stepped);
        if let Some(p) = &mut self.profile {
            if rec.op != Op::Ifetch {
                // The run's records share the first's page (and its kind of access).
                p.reference(rec.pid, rec.vaddr.0 >> BASE_PAGE_SHIFT, false);
                p.repeat(stepped - 1);
            }
        }
        if stepped > 1 {
            self.mem
                .l1d_rehits(c, t.paddr, MemKind::DATA, writes, stepped - 1);
        }
        // The MSHRs' floor moves with the clock (no access of the run read it).
        self.mem.core_clock(c, unit.core.now());
        j - i
    }

    /// The OS handles the page fault core `c`'s MMU reported (once every older instruction
    /// has retired: faults are precise); the pages it moved are shot down on every core that
    /// runs their process; the instruction translates again, and younger instructions
    /// refetch after the handler.
    #[cold]
    fn fault(&mut self, c: usize, f: FaultRequest) -> Result<Translation> {
        if f.host.is_none() && self.cfg.os.fault_model == crate::os::FaultModel::WalkPenalty {
            return self.fault_in_walk(c, f);
        }
        let mut fault_cycles = match f.host {
            Some(gpa) => self.os.ept_violation(gpa)?,
            None => self.os.fault(f.pid, f.va)?.2,
        };
        let older_retired = self.cores[c].core.older_retired();
        fault_cycles += self.settle_moves(c, f.walked.max(older_retired));
        let unit = &mut self.cores[c];
        let t = unit.mmu.finish_fault(
            f,
            older_retired,
            fault_cycles,
            &self.os,
            &mut self.mem,
            &mut self.shared,
        )?;
        if let Found::Fault { resume } = t.found {
            unit.core.refetch_from(resume);
        }
        Ok(t)
    }

    /// `os.fault_model = "walk_penalty"`: the OS maps the page the walk found unmapped, and
    /// the walk takes the fault's cycles (and those of the shootdowns and copies it caused)
    /// as extra latency, as ChampSim's walker does: no wait for older instructions, no
    /// refetch, no second walk. (An EPT violation of a virtualized walk stays a trap.)
    #[cold]
    fn fault_in_walk(&mut self, c: usize, f: FaultRequest) -> Result<Translation> {
        let (pfn, size, mut cycles) = self.os.fault(f.pid, f.va)?;
        cycles += self.settle_moves(c, f.walked);
        self.cores[c].mmu.finish_fault_in_walk(
            f,
            cycles,
            (pfn, size),
            &self.os,
            &mut self.mem,
            &mut self.shared,
        )
    }

    /// Hand core `c`'s walk notes to the OS (Utopia's PTE-based migration); the pages it moves
    /// are shot down and copied from cycle `now`, and the aging passes the walks triggered
    /// read and write the page tables after that. Returns the cycles the core waits for that
    /// (nothing while fast-forwarding: the moves and passes happen, their memory traffic takes
    /// no time).
    #[cold]
    fn deliver_walk_notes(&mut self, c: usize, now: u64) -> Result<u64> {
        let mut notes = std::mem::take(&mut self.cores[c].mmu.walk_notes);
        let mut moved = false;
        for n in notes.drain(..) {
            moved |= self.os.walk_noted(n.pid, n.vpn, n.dram_refs)?;
        }
        // The buffer goes back, so that notes do not allocate in the steady state.
        self.cores[c].mmu.walk_notes = notes;
        Ok(if moved || self.os.scan_pending() {
            self.settle_moves(c, now)
        } else {
            0
        })
    }

    /// Shoot down, from core `c`, the pages whose mappings the OS changed, and run the copies
    /// of those it moved from cycle `now` (while fast-forwarding they take no time). Returns
    /// the cycles core `c` waits for both.
    pub(super) fn settle_moves(&mut self, c: usize, now: u64) -> u64 {
        let mut cycles = 0;
        for (owner, vpn, size) in self.os.take_shootdowns() {
            cycles += self.shoot_down(c, owner, &[(vpn, size)]);
        }
        if self.functional() {
            self.os.take_copies();
            self.os.take_scan(&mut TableScan::default());
            return cycles;
        }
        let copies = self.copy_pages(now);
        let scans = if self.os.scan_pending() {
            self.scan_tables(now + copies)
        } else {
            0
        };
        cycles + copies + scans
    }

    /// Run the page-table scans of the OS's aging passes from cycle `start`, through the
    /// current core's caches as the kernel's loop over the entries does: every line a pass
    /// read, and written after its read if the pass changed it, all issued at once
    /// (as the copies are) so that the L1D's MSHRs and DRAM's banks bound them. Returns the
    /// cycles until the last access ends, which the core waits.
    #[cold]
    fn scan_tables(&mut self, start: u64) -> u64 {
        let mut scan = TableScan::default();
        self.os.take_scan(&mut scan);
        let mut end = start;
        let (mut read, mut written) = (0, 0);
        for page in &scan.pages {
            let kind = MemKind::pt_level(page.level);
            for line in (0..64).filter(|&l| page.read >> l & 1 == 1) {
                let at = PhysAddr(page.frame.addr().0 + line * 64);
                let (r, _) = self.mem.access(at, kind, false, start, Level::L1d);
                read += 1;
                let mut done = start + r;
                if page.written >> line & 1 == 1 {
                    let (w, _) = self.mem.access(at, kind, true, done, Level::L1d);
                    written += 1;
                    done += w;
                }
                end = end.max(done);
            }
        }
        let aging = &mut self.os.stats.aging;
        aging.passes += scan.passes;
        aging.entries += scan.entries;
        aging.lines_read += read;
        aging.lines_written += written;
        aging.cycles += end - start;
        end - start
    }

    /// Run the copies of the pages the OS moved, from cycle `start`, through the current
    /// core's caches as the kernel's page copy does: every line read from the old frame and
    /// written to the new one, all issued at once so that the L1D's MSHRs and DRAM's banks
    /// bound how fast they go. Returns the cycles until the last line is written, which the
    /// faulting core waits (the copy is part of its fault).
    fn copy_pages(&mut self, start: u64) -> u64 {
        let mut end = start;
        for cp in self.os.take_copies() {
            for offset in (0..cp.size.bytes()).step_by(64) {
                let read = PhysAddr(cp.from.addr().0 + offset);
                let (r, _) = self
                    .mem
                    .access(read, MemKind::DATA, false, start, Level::L1d);
                let write = PhysAddr(cp.to.addr().0 + offset);
                let (w, _) = self
                    .mem
                    .access(write, MemKind::DATA, true, start + r, Level::L1d);
                end = end.max(start + r + w);
            }
        }
        self.os.stats.faults.copy_cycles += end - start;
        end - start
    }

    /// Invalidate `pages` of `pid` on core `initiator` and on every other core that has run
    /// `pid` (one IPI each, whose handler stalls that core); returns the cycles the initiator
    /// waits for their acknowledgements.
    pub fn shoot_down(&mut self, initiator: usize, pid: u16, pages: &[(Vpn, PageSize)]) -> u64 {
        let cost = self.cfg.os.shootdown_ipi_cycles;
        let functional = self.functional();
        if let Some(p) = &mut self.profile {
            p.invalidated(pages.len() as u64);
        }
        let mut remote = 0;
        for (i, unit) in self.cores.iter_mut().enumerate() {
            if i == initiator {
                unit.mmu.shootdown(pid, pages, &mut self.shared);
            } else if unit.has_run(pid) {
                unit.mmu.shootdown(pid, pages, &mut self.shared);
                if !functional {
                    unit.core.interrupt(cost);
                }
                remote += 1;
            }
        }
        if remote == 0 || functional {
            return 0;
        }
        self.ipi.shootdowns += 1;
        self.ipi.ipis += remote;
        self.ipi.cycles += cost * (remote + 1);
        cost
    }

    fn verify(&mut self, rec: &Record, got: crate::addr::PhysAddr) -> Result<()> {
        let scheme = &self.cfg.scheme;
        let truth = self.os.truth(rec.pid, rec.vaddr).ok_or_else(|| {
            Error::Verify(format!(
                "{scheme}: {:?} of pid {} translated but the OS has no mapping",
                rec.vaddr, rec.pid
            ))
        })?;
        let want = crate::addr::translate(rec.vaddr, truth.0, truth.1);
        if want != got {
            let vpn = rec.vaddr.vpn();
            let injected = if self.injected == Some((rec.pid, vpn.align_down(truth.1))) {
                " (its entry was corrupted on purpose by sim.verify_inject_after)"
            } else {
                ""
            };
            return Err(Error::Verify(format!(
                "{scheme}: {:?} (vpn {:#x}) of pid {}: MMU gave {got:?}, OS maps it to \
                 {want:?}{injected}",
                rec.vaddr, vpn.0, rec.pid
            )));
        }
        self.verified += 1;
        Ok(())
    }

    /// `sim.verify_inject_after`: corrupt the entries that translate `rec`'s page in the
    /// scheme's own structures, and shoot the page down on every core so that its next
    /// translation reads them. A page not mapped yet is left alone; the next record's is
    /// tried instead.
    #[cold]
    fn inject(&mut self, rec: &Record) {
        let Some((vpn, size)) = self.os.corrupt_mapping(rec.pid, rec.vaddr) else {
            return;
        };
        for unit in &mut self.cores {
            unit.mmu
                .shootdown(rec.pid, &[(vpn, size)], &mut self.shared);
        }
        self.inject_at = u64::MAX;
        self.injected = Some((rec.pid, vpn));
    }

    fn end_warmup(&mut self) {
        self.warm = true;
        self.reset_measurement();
    }

    /// Start counting from here: the structures keep their contents, the counters restart.
    fn reset_measurement(&mut self) {
        for unit in &mut self.cores {
            unit.base_instructions = unit.core.instructions();
            unit.base_cycles = unit.core.cycles();
            unit.core.reset_stats();
            unit.mmu.reset_stats();
        }
        S::Mmu::reset_shared_stats(&mut self.shared);
        self.mem.reset_stats();
        self.os.reset_stats();
        if let Some(p) = &mut self.profile {
            p.reset_counts();
        }
        self.ipi = IpiCounters::default();
        self.barriers = BarrierCounters::default();
    }

    /// Instructions measured so far (since the end of warm-up), over all cores.
    fn measured_instructions(&self) -> u64 {
        self.cores.iter().map(CoreUnit::instructions).sum()
    }

    /// Cycles measured so far: the slowest core's.
    fn measured_cycles(&self) -> u64 {
        self.cores.iter().map(CoreUnit::cycles).max().unwrap_or(0)
    }

    fn mmu_total(&self) -> MmuSnapshot {
        let mut total = self.cores[0].mmu.snapshot();
        for unit in &self.cores[1..] {
            total.merge(&unit.mmu.snapshot());
        }
        total.scheme.extend(S::Mmu::shared_stats(&self.shared));
        total
    }

    fn sample_epoch(&mut self) {
        let mmu = self.mmu_total();
        let c = &mmu.counters;
        self.epochs.push(EpochSample {
            instructions: self.measured_instructions(),
            cycles: self.measured_cycles(),
            l1tlb_misses: c.l1_misses,
            l2tlb_misses: c.l2_misses,
            walks: c.walks,
            faults: self.os.stats.faults.minor + self.os.stats.faults.major,
            pt_bytes: self.os.pt_bytes(),
            free_frames: self.os.buddy.free_frames(),
            l2_translation_fraction: self.mem.translation_fraction(Level::L2),
            llc_translation_fraction: self.mem.translation_fraction(Level::Llc),
            restseg_used: self.os.used_slots(),
        });
    }

    /// After each record: whether the run has reached `sim.max_instructions`, handling the
    /// end of warm-up and epoch samples on the way. One comparison per record: the work is
    /// done when the instruction count reaches the next of those points.
    #[inline(always)]
    fn after_step(&mut self) -> bool {
        self.instructions >= self.next_event && self.events()
    }

    /// The instruction count at which `events` has something to do next.
    fn next_event(&self) -> u64 {
        let sim = &self.cfg.sim;
        let mut next = u64::MAX;
        if !self.warm {
            // Programs of a mix each end their own warm-up (`programs.rs`).
            if self.programs.is_empty() {
                next = next.min(sim.warmup_instructions);
            }
        } else if sim.epoch_instructions > 0 {
            next = next.min(self.next_epoch);
        }
        if sim.max_instructions > 0 {
            next = next.min(sim.max_instructions);
        }
        next
    }

    /// End the warm-up, sample an epoch, and say whether the run has reached
    /// `sim.max_instructions`.
    #[cold]
    fn events(&mut self) -> bool {
        let instr = self.instructions;
        let epoch = self.cfg.sim.epoch_instructions;
        if !self.warm && self.programs.is_empty() && instr >= self.cfg.sim.warmup_instructions {
            self.end_warmup();
            if epoch > 0 {
                self.next_epoch = instr + epoch;
            }
        }
        if epoch > 0 && self.warm && instr >= self.next_epoch {
            self.sample_epoch();
            self.next_epoch += epoch;
        }
        self.next_event = self.next_event();
        let max = self.cfg.sim.max_instructions;
        max > 0 && instr >= max
    }

    /// Run to the end of the source (or `sim.max_instructions`). `progress(records, total)` is
    /// called every batch; an error it returns (e.g. [`Error::Interrupted`]) stops the run.
    pub fn run(
        &mut self,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<Stats> {
        if !self.programs.is_empty() {
            self.fast_forward_programs(progress)?;
            self.run_programs(progress)?;
            return Ok(self.stats());
        }
        let first = self.fast_forward(progress)?;
        if self.translation_only {
            self.run_untimed(first, progress)?;
        } else if self.cores.len() == 1 {
            self.run_one_core(first, progress)?;
        } else {
            self.run_cores(first, progress)?;
        }
        Ok(self.stats())
    }

    /// Read the next records from the source. A workload that maps its memory while it makes
    /// them (`populate`, as `MAP_POPULATE` or an initialisation loop would) can make the frame
    /// policy move pages already mapped, of this or another process (Utopia's shared
    /// RestSegs evict to the FlexSeg): the cores that ran those processes drop their cached
    /// translations here, at no cost, as populating is charged to no core. Left queued, they
    /// would all be shot down at the next fault or migration, each with its IPIs.
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        self.source.fill(buf)?;
        self.drop_moved_translations();
        Ok(())
    }

    /// After reading records: the cores that ran the processes whose pages the OS moved
    /// meanwhile drop those pages' translations, at no cost (see [`System::fill`]).
    fn drop_moved_translations(&mut self) {
        // One core keeps no list of the processes it ran.
        let one = self.cores.len() == 1;
        for (pid, vpn, size) in self.os.take_shootdowns() {
            if let Some(p) = &mut self.profile {
                p.invalidated(1);
            }
            for unit in &mut self.cores {
                if one || unit.has_run(pid) {
                    unit.mmu.shootdown(pid, &[(vpn, size)], &mut self.shared);
                }
            }
        }
    }

    /// One core: every record in source order, no queues.
    fn run_one_core(
        &mut self,
        mut buf: Vec<Record>,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<()> {
        let total = self.source.len_hint();
        let mut done = self.skipped.records;
        'outer: loop {
            if buf.is_empty() {
                self.fill(&mut buf)?;
                if buf.is_empty() {
                    break;
                }
            }
            // Bit k: whether the record k places back of the one `2 * PREFETCH_AHEAD` ahead is
            // on a fresh page (one to prefetch): each record is asked once, at the far
            // distance, and its answer read again `PREFETCH_AHEAD` records later.
            let mut fresh_pages = (PREFETCH_AHEAD..2 * PREFETCH_AHEAD)
                .fold(0u32, |bits, j| bits << 1 | fresh_page(&buf, j) as u32);
            let mut i = 0;
            while i < buf.len() {
                let far = i + 2 * PREFETCH_AHEAD;
                let far_fresh = fresh_page(&buf, far);
                fresh_pages = fresh_pages << 1 | far_fresh as u32;
                if far_fresh {
                    self.prefetch(&buf[far], Prefetch::Index);
                }
                if fresh_pages >> PREFETCH_AHEAD & 1 == 1 {
                    self.prefetch(&buf[i + PREFETCH_AHEAD], Prefetch::Word);
                    self.prefetch_profile(&buf[i + PREFETCH_AHEAD]);
                }
                let mut stepped = self.step_repeats(0, &buf, i, &mut fresh_pages);
                if stepped == 0 {
                    self.step_on(0, &buf[i]).map_err(|e| e.at_record(done))?;
                    stepped = 1;
                }
                done += stepped as u64;
                i += stepped;
                if self.after_step() {
                    break 'outer;
                }
            }
            buf.clear();
            progress(done, total)?;
        }
        progress(done, total)
    }

    /// `sim.timing = "translation"`: every record in source order, on the core it names,
    /// translated with nothing timed ([`System::step_untimed`]). Without clocks, cores do not
    /// race: records run in the order the source gives them, and barriers have nothing to
    /// wait for.
    fn run_untimed(
        &mut self,
        mut buf: Vec<Record>,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<()> {
        let total = self.source.len_hint();
        let mut done = self.skipped.records;
        let n = self.cores.len();
        'outer: loop {
            if buf.is_empty() {
                self.fill(&mut buf)?;
                if buf.is_empty() {
                    break;
                }
            }
            for i in 0..buf.len() {
                // The host caches what the walks a few records ahead read, as in a detailed
                // run (a hint that changes nothing simulated).
                let far = i + 2 * PREFETCH_AHEAD;
                if fresh_page(&buf, far) {
                    self.prefetch(&buf[far], Prefetch::Index);
                }
                if fresh_page(&buf, i + PREFETCH_AHEAD) {
                    self.prefetch(&buf[i + PREFETCH_AHEAD], Prefetch::Word);
                    self.prefetch_profile(&buf[i + PREFETCH_AHEAD]);
                }
                let rec = &buf[i];
                let c = rec.core as usize % n;
                if n > 1 {
                    self.cores[c].runs(rec.pid);
                }
                self.step_untimed(c, rec).map_err(|e| e.at_record(done))?;
                done += 1;
                if self.after_step() {
                    break 'outer;
                }
            }
            buf.clear();
            progress(done, total)?;
        }
        progress(done, total)
    }

    /// Several cores: records wait in their core's queue; the core with the smallest clock
    /// among those with records steps next. A record after a barrier waits, with the records
    /// behind it, until the queues have drained; the cores then meet at the barrier.
    fn run_cores(
        &mut self,
        first: Vec<Record>,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<()> {
        let total = self.source.len_hint();
        let mut buf = Vec::with_capacity(BATCH);
        // Records read but not handed to a core yet: only while a barrier holds them back.
        let mut held: VecDeque<Record> = first.into();
        let (mut done, mut queued, mut exhausted) = (self.skipped.records, 0, false);
        // The stream of the record handed out last.
        let mut previous = None;
        loop {
            // Keep every core supplied, so that the core whose turn it is has its records.
            loop {
                queued += self.distribute(&mut held, queued, &mut previous);
                if !held.is_empty()
                    || exhausted
                    || queued >= MAX_QUEUED
                    || self.cores.iter().all(|u| !u.queue.is_empty())
                {
                    break;
                }
                self.fill(&mut buf)?;
                exhausted = buf.is_empty();
                held.extend(buf.drain(..));
            }
            let Some(c) = (0..self.cores.len())
                .filter(|&i| !self.cores[i].queue.is_empty())
                .min_by_key(|&i| self.cores[i].core.now())
            else {
                if held.is_empty() {
                    break;
                }
                // Every record before the barrier has run: it opens.
                continue;
            };
            let unit = &mut self.cores[c];
            let rec = unit.queue.pop_front().expect("chosen for its records");
            // The cores a shootdown of this process must reach (one core needs no list).
            unit.runs(rec.pid);
            queued -= 1;
            self.step_on(c, &rec)?;
            done += 1;
            if self.after_step() {
                break;
            }
            if done.is_multiple_of(BATCH as u64) {
                progress(done, total)?;
            }
        }
        progress(done, total)
    }

    /// Hands the records of `held` to their cores' queues, up to a record after a barrier
    /// while `queued` records before it still wait; returns how many it handed out. A record
    /// joining the instruction of the record before it keeps that only if the record handed
    /// out before it (`previous`, the stream of the last one) is of its own stream, as on one
    /// core.
    fn distribute(
        &mut self,
        held: &mut VecDeque<Record>,
        mut queued: usize,
        previous: &mut Option<u8>,
    ) -> usize {
        let n = self.cores.len();
        let mut handed = 0;
        while let Some(mut rec) = held.pop_front() {
            if rec.after_barrier() {
                if queued > 0 {
                    held.push_front(rec);
                    break;
                }
                self.barrier(rec.pid);
            }
            if rec.joins_previous() && *previous != Some(rec.core) {
                rec.flags &= !Record::SAME_INSTRUCTION;
            }
            *previous = Some(rec.core);
            self.cores[rec.core as usize % n].queue.push_back(rec);
            queued += 1;
            handed += 1;
        }
        handed
    }

    /// The threads of process `pid` meet at a barrier, every record before it having run:
    /// each core that has run the process waits until the last of them has retired its
    /// work.
    fn barrier(&mut self, pid: u16) {
        let meeting = self.cores.iter().filter(|u| u.has_run(pid));
        let Some(open) = meeting.map(|u| u.core.cycles()).max() else {
            return;
        };
        for unit in self.cores.iter_mut().filter(|u| u.has_run(pid)) {
            self.barriers.wait_cycles += unit.core.wait_until(open);
        }
        self.barriers.barriers += 1;
    }

    /// Core `i`'s own statistics as of now (`cores[i]`).
    fn core_snapshot(&self, i: usize) -> PerCoreSnapshot {
        let u = &self.cores[i];
        PerCoreSnapshot {
            core: CoreSnapshot {
                instructions: u.instructions(),
                cycles: u.cycles(),
                ipc: ipc(u.instructions(), u.cycles()),
                stats: u.core.stats.clone(),
            },
            mmu: u.mmu.snapshot(),
            cache: PrivateCachesSnapshot {
                l1d: self.mem.cache_of(i, Level::L1d).snapshot(),
                l2: self.mem.cache_of(i, Level::L2).snapshot(),
            },
        }
    }

    /// The stats tree as of now: totals over the cores, and each core's own when there are
    /// several.
    pub fn stats(&self) -> Stats {
        let instructions = self.measured_instructions();
        let cycles = self.measured_cycles();
        let per_ki = |n: u64| {
            if instructions == 0 {
                0.0
            } else {
                n as f64 * 1000.0 / instructions as f64
            }
        };
        let mmu = self.mmu_total();
        let mut walk_refs = crate::mmu::walk::WalkRefStats::default();
        let mut core_stats = crate::core::CoreStats::default();
        for unit in &self.cores {
            walk_refs.add(&unit.mmu.walk_refs);
            core_stats.add(&unit.core.stats);
        }
        let c = &mmu.counters;
        let walks = c.walks;
        let summary = Summary {
            ipc: ipc(instructions, cycles),
            instructions,
            cycles,
            l1tlb_mpki: per_ki(c.l1_misses),
            l2tlb_mpki: per_ki(c.l2_misses),
            walks,
            avg_walk_latency: if walks == 0 {
                0.0
            } else {
                c.walk_cycles as f64 / walks as f64
            },
            walk_refs_l1: walk_refs.by_level[0],
            walk_refs_l2: walk_refs.by_level[1],
            walk_refs_llc: walk_refs.by_level[2],
            walk_refs_dram: walk_refs.by_level[3],
            faults: self.os.stats.faults.minor + self.os.stats.faults.major,
            fast_forwarded_instructions: self.skipped.instructions,
            dram_row_hit_rate: self.mem.dram.row_hit_rate(),
        };
        let per_core = if self.cores.len() == 1 {
            Vec::new()
        } else {
            (0..self.cores.len())
                .map(|i| self.core_snapshot(i))
                .collect()
        };
        Stats {
            scheme: self.cfg.scheme.clone(),
            workload: self.cfg.workload.name().to_string(),
            summary,
            core: CoreSnapshot {
                instructions,
                cycles,
                ipc: summary.ipc,
                stats: core_stats,
            },
            walk: WalkSnapshot {
                walks,
                cycles: c.walk_cycles,
                avg_latency: summary.avg_walk_latency,
                refs: walk_refs.snapshot(),
            },
            mmu,
            cache: CachesSnapshot {
                l1d: self.mem.snapshot(Level::L1d),
                l2: self.mem.snapshot(Level::L2),
                llc: self.mem.snapshot(Level::Llc),
                l1d_mshr: self.mem.mshr_stats,
            },
            dram: self.mem.dram.stats().clone(),
            topology: self.mem.topology().map(Topology::stats),
            os: self.os.snapshot(),
            system: SystemSnapshot {
                cores: self.cores.len() as u32,
                shootdowns_remote: self.ipi.shootdowns,
                shootdown_ipis: self.ipi.ipis,
                shootdown_ipi_cycles: self.ipi.cycles,
                barriers: self.barriers.barriers,
                barrier_wait_cycles: self.barriers.wait_cycles,
            },
            cores: per_core,
            mix: self.mix_snapshot(),
            fast_forward: self.skipped,
            timing: if self.translation_only {
                "translation"
            } else {
                "detailed"
            },
            profile: self.profile.as_ref().map(|p| ProfileSnapshot {
                tlb: Some(p.snapshot()),
            }),
            verify: VerifySnapshot {
                enabled: self.cfg.sim.verify,
                translations_checked: self.verified,
            },
            epochs: self.epochs.clone(),
        }
    }
}
