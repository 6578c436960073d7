//! Infrastructure for workload generators written as ordinary algorithms.
//!
//! A generator allocates its data structures in the simulated process (`SimHeap`, through the OS
//! model's `mmap`, like malloc), then runs its algorithm on a producer thread, calling
//! [`Emitter::load`]/[`Emitter::store`] for every memory access and [`Emitter::instr`] for the
//! other instructions. Records travel to the simulator in batches over a bounded channel
//! ([`ThreadedSource`]). The record stream depends only on the algorithm and its seed, never on
//! thread timing, so runs stay deterministic; generation overlaps simulation on a second core.
//!
//! A multi-threaded program is a *team*: one algorithm per software thread, each on its own
//! producer thread with its own [`Emitter`], so each thread's records carry its core and their
//! `instr_delta` and `dep` count within that thread's own stream. [`ThreadedSource::team`] merges
//! the threads' streams round robin, [`TURN`] records at a time, so no thread's records run far
//! ahead of the others'. [`Emitter::barrier`] and [`Emitter::share`] are the team's barriers: on
//! the host they synchronise the producer threads (and hand data computed once to all of them),
//! and in the merged stream no record a thread emits after a barrier comes before a record any
//! thread emitted before it.
//!
//! Algorithms propagate [`Stop`] with `?`: it means the reference budget is spent or the
//! simulator stopped reading, and unwinds the algorithm cleanly.

use crate::addr::{page_rounded, VirtAddr};
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::trace::pipe::{pipe, PipeReceiver, PipeSender};
use crate::trace::{Op, Record, RecordSource, Roi, BATCH};
use std::any::Any;
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::turns::Turns;
pub use super::turns::TURN;

/// Batches in flight between producer and simulator.
const CHANNEL_DEPTH: usize = 8;
/// Most threads a team may have (the `threads` key of multi-threaded workloads).
pub const MAX_THREADS: u32 = 64;

/// The generator must stop: budget spent, or nobody reads any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop;

/// Identifies an emitted record, for later records that depend on it (`dep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecId(u64);

/// What a producer sends: records, whether its thread then waits at a barrier, and which of
/// the records (if any) is the first of the region of interest.
struct Batch {
    records: Vec<Record>,
    barrier: bool,
    roi: Option<usize>,
}

/// Data a team's thread 0 computed and handed to every thread at a barrier.
type Shared = Arc<dyn Any + Send + Sync>;

pub struct Emitter {
    tx: PipeSender<Batch>,
    /// Emptied batches the reader hands back, so batches are reused rather than allocated.
    spare: Receiver<Vec<Record>>,
    batch: Vec<Record>,
    pid: u16,
    /// The software thread this emitter belongs to, which is also the core its records carry.
    core: u8,
    threads: usize,
    /// The team's host-side barrier; `None` for a single-threaded program.
    team: Option<Arc<TeamSync>>,
    pending_instr: u32,
    emitted: u64,
    budget: u64,
    /// [`Emitter::roi`] was called: the next record is the first of the region of interest.
    roi_next: bool,
    /// [`Emitter::roi`] has been called before: later marks are ignored.
    roi_marked: bool,
    /// Where in `batch` the region of interest begins.
    batch_roi: Option<usize>,
}

impl Emitter {
    /// Count `n` non-memory instructions before the next access.
    #[inline]
    pub fn instr(&mut self, n: u32) {
        self.pending_instr = self.pending_instr.saturating_add(n);
    }

    #[inline]
    fn emit(
        &mut self,
        vaddr: VirtAddr,
        op: Op,
        size: u8,
        dep: Option<RecId>,
    ) -> std::result::Result<RecId, Stop> {
        if self.emitted >= self.budget {
            return Err(Stop);
        }
        let id = self.emitted;
        if self.roi_next {
            self.roi_next = false;
            self.batch_roi = Some(self.batch.len());
        }
        let dep = dep.map_or(0, |d| (id - d.0).min(u32::MAX as u64) as u32);
        self.batch.push(Record {
            vaddr,
            op,
            size,
            core: self.core,
            pid: self.pid,
            instr_delta: std::mem::take(&mut self.pending_instr),
            dep,
            flags: 0,
        });
        self.emitted += 1;
        if self.batch.len() == BATCH {
            self.flush()?;
        }
        Ok(RecId(id))
    }

    /// A load whose address is known independently of earlier loads.
    #[inline]
    pub fn load(&mut self, va: VirtAddr, size: u8) -> std::result::Result<RecId, Stop> {
        self.emit(va, Op::Load, size, None)
    }

    /// A load whose address comes from the value loaded by `on` (pointer chasing).
    #[inline]
    pub fn load_dep(
        &mut self,
        va: VirtAddr,
        size: u8,
        on: RecId,
    ) -> std::result::Result<RecId, Stop> {
        self.emit(va, Op::Load, size, Some(on))
    }

    #[inline]
    pub fn store(&mut self, va: VirtAddr, size: u8) -> std::result::Result<RecId, Stop> {
        self.emit(va, Op::Store, size, None)
    }

    /// A store whose address comes from the value loaded by `on`.
    #[inline]
    pub fn store_dep(
        &mut self,
        va: VirtAddr,
        size: u8,
        on: RecId,
    ) -> std::result::Result<RecId, Stop> {
        self.emit(va, Op::Store, size, Some(on))
    }

    /// The program's set-up is done: its region of interest (what a run measures, after
    /// fast-forwarding through the set-up) begins with the next record this thread emits.
    /// A source built with [`ThreadedSource::marks_roi`] must call this; in a team, the
    /// first thread to get there starts the region for all.
    ///
    /// Only a thread's first mark counts. A kernel that redoes its initialisation on every
    /// restart (a graph search resetting its per-vertex state) marks after it each time and
    /// the region begins after the first; without this, a second mark landing in the same
    /// batch as the first would move the region's start to it.
    pub fn roi(&mut self) {
        if !self.roi_marked {
            self.roi_marked = true;
            self.roi_next = true;
        }
    }

    /// Records emitted so far (by this thread).
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// This software thread's index in its team (0 in a single-threaded program).
    pub fn thread(&self) -> usize {
        self.core as usize
    }

    /// Threads in the team (1 in a single-threaded program).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// This thread's part of the loop iterations `range` under OpenMP's static schedule.
    pub fn static_share(&self, range: Range<u64>) -> Range<u64> {
        static_share(range, self.thread(), self.threads)
    }

    /// Wait until every thread of the team gets here (an OpenMP barrier). Nothing happens in a
    /// single-threaded program.
    pub fn barrier(&mut self) -> std::result::Result<(), Stop> {
        self.rendezvous(None).map(drop)
    }

    /// A barrier at which thread 0 runs `f` and every thread receives its result: data computed
    /// once that the threads share (the graph, a search's plan, the rank arrays), as a program
    /// computes it in a sequential section before a parallel one. The other threads never call
    /// `f`. In a single-threaded program this is just `f()`.
    pub fn share<T: Send + Sync + 'static>(
        &mut self,
        f: impl FnOnce() -> T,
    ) -> std::result::Result<Arc<T>, Stop> {
        if self.team.is_none() {
            return Ok(Arc::new(f()));
        }
        let offer = (self.core == 0).then(|| Arc::new(f()) as Shared);
        // No value means thread 0 ended before it got here: nothing to go on with.
        let got = self.rendezvous(offer)?.ok_or(Stop)?;
        got.downcast::<T>().map_err(|_| Stop)
    }

    fn rendezvous(&mut self, offer: Option<Shared>) -> std::result::Result<Option<Shared>, Stop> {
        let Some(team) = self.team.clone() else {
            return Ok(offer);
        };
        // Tell the merged stream first that this thread is at the barrier: otherwise it could
        // wait for this thread's records while this thread waits here for the others, whose
        // records it is not reading.
        self.send(true)?;
        team.wait(offer)
    }

    fn flush(&mut self) -> std::result::Result<(), Stop> {
        self.send(false)
    }

    /// Send the batch; `barrier`: the thread waits at a barrier after these records (sent even
    /// without records, to say so).
    fn send(&mut self, barrier: bool) -> std::result::Result<(), Stop> {
        if self.batch.is_empty() && !barrier {
            return Ok(());
        }
        let next = match self.spare.try_recv() {
            Ok(mut v) => {
                v.clear();
                v
            }
            Err(_) => Vec::with_capacity(BATCH),
        };
        let records = std::mem::replace(&mut self.batch, next);
        let roi = self.batch_roi.take();
        self.tx
            .send(Batch {
                records,
                barrier,
                roi,
            })
            .map_err(|_| Stop)
    }
}

/// Thread `thread`'s part of the loop iterations `range` when `threads` threads share it as
/// OpenMP's static schedule does (libgomp): one contiguous chunk each, in thread order, the first
/// `len % threads` threads taking one iteration more.
pub fn static_share(range: Range<u64>, thread: usize, threads: usize) -> Range<u64> {
    let n = range.end.saturating_sub(range.start);
    let (t, threads) = (thread as u64, threads.max(1) as u64);
    let (q, r) = (n / threads, n % threads);
    let start = range.start + t * q + t.min(r);
    let len = if t < r { q + 1 } else { q };
    start..start + len
}

/// The host side of a team's barriers. Every thread waits in [`TeamSync::wait`] until all
/// threads still running have arrived; a thread that ends leaves, so the others never wait for
/// it; [`TeamSync::abort`] (nobody reads the records any more) sends every waiter home with
/// `Stop`.
struct TeamSync {
    state: Mutex<SyncState>,
    opened: Condvar,
}

struct SyncState {
    running: usize,
    arrived: usize,
    /// Barriers opened so far: a waiter leaves when this moves past the one it waits at.
    generation: u64,
    aborted: bool,
    /// What thread 0 brought to the barrier being filled, and what the last opened one handed
    /// out. The latter stays until the next barrier opens, which needs every waiter of this one
    /// to have woken and taken its copy first.
    offered: Option<Shared>,
    handed: Option<Shared>,
}

impl SyncState {
    fn open(&mut self) {
        self.generation += 1;
        self.arrived = 0;
        self.handed = self.offered.take();
    }
}

impl TeamSync {
    fn new(threads: usize) -> TeamSync {
        TeamSync {
            state: Mutex::new(SyncState {
                running: threads,
                arrived: 0,
                generation: 0,
                aborted: false,
                offered: None,
                handed: None,
            }),
            opened: Condvar::new(),
        }
    }

    /// A panicking producer is reported when it is joined; its lock state is still consistent
    /// (every update below is complete before anything can panic), so carry on with it.
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait(&self, offer: Option<Shared>) -> std::result::Result<Option<Shared>, Stop> {
        let mut s = self.lock();
        if s.aborted {
            return Err(Stop);
        }
        if offer.is_some() {
            s.offered = offer;
        }
        s.arrived += 1;
        if s.arrived >= s.running {
            s.open();
            self.opened.notify_all();
            return Ok(s.handed.clone());
        }
        let generation = s.generation;
        while s.generation == generation && !s.aborted {
            s = self.opened.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if s.generation == generation {
            return Err(Stop);
        }
        Ok(s.handed.clone())
    }

    /// A thread ended: the barrier it would have reached next opens without it.
    fn leave(&self) {
        let mut s = self.lock();
        s.running = s.running.saturating_sub(1);
        if s.arrived > 0 && s.arrived >= s.running {
            s.open();
            self.opened.notify_all();
        }
    }

    fn abort(&self) {
        self.lock().aborted = true;
        self.opened.notify_all();
    }
}

/// Leaves the team when the producer thread ends, even by a panic, so no other thread waits at
/// a barrier for it forever.
struct Leave(Option<Arc<TeamSync>>);

impl Drop for Leave {
    fn drop(&mut self) {
        if let Some(team) = &self.0 {
            team.leave();
        }
    }
}

/// A thread's algorithm, not started yet.
type Algorithm = Box<dyn FnOnce(&mut Emitter) -> std::result::Result<(), Stop> + Send>;

/// How the producer thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The algorithm ran to its natural end, or the budget was spent.
    Finished,
    /// The algorithm gave up (`Stop`) with budget left: a preallocated structure ran out.
    StoppedEarly,
}

/// One software thread's producer, as the merged stream sees it.
struct Producer {
    rx: PipeReceiver<Batch>,
    /// Where consumed batches go back to the producer for reuse.
    spare_tx: SyncSender<Vec<Record>>,
    records: Vec<Record>,
    pos: usize,
    /// After `records`, the thread waits at a barrier.
    barrier_next: bool,
    /// The region of interest begins at this record of `records`.
    roi_at: Option<usize>,
    worker: Option<JoinHandle<Outcome>>,
}

/// A `RecordSource` fed by generators running on their own threads: one program, or the threads
/// of a team merged into one stream. The threads start on the first `fill`, so building a
/// workload only to measure its footprint (`xlat workloads`) never runs its algorithm.
pub struct ThreadedSource {
    pid: u16,
    pending: Vec<Algorithm>,
    producers: Vec<Producer>,
    team: Option<Arc<TeamSync>>,
    turns: Turns,
    emitted: u64,
    total: u64,
    roi: Roi,
}

impl ThreadedSource {
    /// Run `algorithm` on a producer thread for process `pid`, emitting at most `budget`
    /// records. The algorithm may loop forever; the budget stops it.
    pub fn spawn<F>(pid: u16, budget: u64, algorithm: F) -> ThreadedSource
    where
        F: FnOnce(&mut Emitter) -> std::result::Result<(), Stop> + Send + 'static,
    {
        ThreadedSource::of(pid, budget, vec![Box::new(algorithm)])
    }

    /// Run a program of `threads` software threads in process `pid` (all sharing its address
    /// space): `algorithm(i)` is thread `i`'s algorithm, whose records carry core `i`. The
    /// threads' streams are merged round robin, [`TURN`] records at a time, into at most `budget`
    /// records in all. One thread is exactly [`ThreadedSource::spawn`].
    pub fn team<F>(
        pid: u16,
        budget: u64,
        threads: u32,
        mut algorithm: impl FnMut(usize) -> F,
    ) -> ThreadedSource
    where
        F: FnOnce(&mut Emitter) -> std::result::Result<(), Stop> + Send + 'static,
    {
        let threads = threads.clamp(1, MAX_THREADS) as usize;
        let pending = (0..threads)
            .map(|i| Box::new(algorithm(i)) as Algorithm)
            .collect();
        ThreadedSource::of(pid, budget, pending)
    }

    fn of(pid: u16, budget: u64, pending: Vec<Algorithm>) -> ThreadedSource {
        let threads = pending.len();
        ThreadedSource {
            pid,
            pending,
            producers: Vec::new(),
            team: None,
            turns: Turns::new(threads),
            emitted: 0,
            total: budget,
            roi: Roi::At(0),
        }
    }

    /// The algorithm marks where its set-up ends ([`Emitter::roi`]); until it does, the
    /// records are set-up. The budget then counts the records of the region of interest:
    /// `references` means the measured kernel's references, whatever the set-up took.
    pub fn marks_roi(mut self) -> ThreadedSource {
        self.roi = Roi::NotYet;
        self
    }

    fn start(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let threads = self.pending.len();
        let team = (threads > 1).then(|| Arc::new(TeamSync::new(threads)));
        for (core, algorithm) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            let (tx, rx) = pipe(CHANNEL_DEPTH);
            let (spare_tx, spare) = sync_channel(CHANNEL_DEPTH + 2);
            let mut e = Emitter {
                tx,
                spare,
                batch: Vec::with_capacity(BATCH),
                pid: self.pid,
                core: core as u8,
                threads,
                team: team.clone(),
                pending_instr: 0,
                emitted: 0,
                // The merged stream enforces a budget that starts at the region of interest.
                budget: if self.roi == Roi::NotYet {
                    u64::MAX
                } else {
                    self.total
                },
                roi_next: false,
                roi_marked: false,
                batch_roi: None,
            };
            let leave = Leave(team.clone());
            let worker = std::thread::Builder::new()
                .name(format!("xlat-workload-{core}"))
                .spawn(move || {
                    let _leave = leave;
                    let result = algorithm(&mut e);
                    let delivered = e.flush().is_ok();
                    if result.is_err() && delivered && e.emitted < e.budget {
                        Outcome::StoppedEarly
                    } else {
                        Outcome::Finished
                    }
                })
                .map_err(|err| Error::Workload(format!("cannot start a workload thread: {err}")))?;
            self.producers.push(Producer {
                rx,
                spare_tx,
                records: Vec::new(),
                pos: 0,
                barrier_next: false,
                roi_at: None,
                worker: Some(worker),
            });
        }
        self.team = team;
        Ok(())
    }

    /// Records the merged stream may hold in all.
    fn limit(&self) -> u64 {
        self.roi.end_of_budget(self.total)
    }

    /// The run ended: the budget is spent, or every thread has finished.
    fn finish(&mut self) -> Result<()> {
        if self.emitted >= self.limit() {
            // The threads may still be running (one blocked on its channel, others at a
            // barrier): hang up on them so they stop, without waiting for them.
            self.producers.clear();
            if let Some(team) = &self.team {
                team.abort();
            }
            return Ok(());
        }
        let mut stopped_early = false;
        let mut panicked = false;
        for p in &mut self.producers {
            match p.worker.take().map(JoinHandle::join) {
                Some(Ok(Outcome::StoppedEarly)) => stopped_early = true,
                Some(Err(_)) => panicked = true,
                Some(Ok(Outcome::Finished)) | None => {}
            }
        }
        if panicked {
            // A panic there is an engine bug: report it.
            return Err(Error::Workload(
                "the workload generator thread panicked".into(),
            ));
        }
        if stopped_early {
            return Err(Error::Workload(format!(
                "the workload stopped after {} of {} references: a structure it \
                 preallocated (e.g. the node pool for updates) ran out; lower \
                 workload.references or workload.update_ratio",
                match self.roi {
                    Roi::At(start) => self.emitted.saturating_sub(start),
                    Roi::NotYet => 0,
                },
                self.total
            )));
        }
        Ok(())
    }

    /// Where in the merged stream each barrier opened (tests of the interleaving).
    #[cfg(test)]
    pub(crate) fn barrier_positions(&self) -> &[u64] {
        &self.turns.barriers
    }
}

impl RecordSource for ThreadedSource {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        self.start()?;
        let cap = buf.capacity().max(1);
        while buf.len() < cap && self.emitted < self.limit() {
            // Nobody can run: every thread has finished.
            let Some(i) = self.turns.current() else { break };
            let p = &mut self.producers[i];
            if p.pos == p.records.len() {
                if p.barrier_next {
                    p.barrier_next = false;
                    self.turns.at_barrier(self.emitted);
                    continue;
                }
                match p.rx.recv() {
                    Ok(batch) => {
                        let used = std::mem::replace(&mut p.records, batch.records);
                        // Full (the producer has enough) or gone: just drop it.
                        let _ = p.spare_tx.try_send(used);
                        p.pos = 0;
                        p.barrier_next = batch.barrier;
                        p.roi_at = batch.roi;
                    }
                    Err(_) => self.turns.finished(self.emitted),
                }
                continue;
            }
            let left = usize::try_from(self.roi.end_of_budget(self.total) - self.emitted)
                .unwrap_or(usize::MAX);
            let n = (cap - buf.len())
                .min(p.records.len() - p.pos)
                .min(self.turns.turn_left())
                .min(left);
            // A whole batch into an empty buffer changes hands without a copy; the
            // simulator's old buffer goes back to the producer with the next spare.
            let whole = buf.is_empty() && p.pos == 0 && n == p.records.len();
            if whole {
                std::mem::swap(buf, &mut p.records);
            } else {
                buf.extend_from_slice(&p.records[p.pos..p.pos + n]);
            }
            let mut n = n;
            if let Some(at) = p.roi_at.filter(|&at| at < p.pos + n) {
                p.roi_at = None;
                if self.roi == Roi::NotYet {
                    let start = self.emitted + (at - p.pos) as u64;
                    self.roi = Roi::At(start);
                    // A budget smaller than the rest of this copy ends the stream inside it.
                    let over = (self.emitted + n as u64)
                        .saturating_sub(self.roi.end_of_budget(self.total));
                    buf.truncate(buf.len() - over as usize);
                    n -= over as usize;
                }
            }
            if n > 0 && self.turns.take_opened() {
                let first = buf.len() - n;
                buf[first].flags |= Record::AFTER_BARRIER;
            }
            // After a hand-over the producer's side is empty: its next batch is due.
            p.pos = if whole { p.records.len() } else { p.pos + n };
            self.emitted += n as u64;
            self.turns.took(n, self.emitted);
        }
        if buf.is_empty() {
            self.finish()?;
        }
        Ok(())
    }

    /// Unknown while the set-up lasts (its length is the program's business).
    fn len_hint(&self) -> Option<u64> {
        match self.roi {
            Roi::At(start) => Some(start + self.total),
            Roi::NotYet => None,
        }
    }

    fn roi(&self) -> Roi {
        self.roi
    }
}

impl Drop for ThreadedSource {
    /// Threads waiting at a barrier would wait forever once nobody reads: send them home.
    fn drop(&mut self) {
        if let Some(team) = &self.team {
            team.abort();
        }
    }
}

/// A malloc-like allocator over the simulated process's address space, as glibc's: large
/// allocations get their own `mmap` (above glibc's mmap threshold), small ones come from the
/// main arena on the brk heap, grown by `sbrk` as it fills. Under a layout without a brk heap
/// (`os.layout = "packed"`) small ones come from 64 MiB `mmap`ed arenas instead. Chunk headers
/// are not modelled: consecutive small allocations are packed at their alignment.
pub struct SimHeap {
    pid: u16,
    kind: MapKind,
    arena_next: u64,
    arena_end: u64,
    populate: bool,
}

/// glibc's default mmap threshold.
const MMAP_THRESHOLD: u64 = 128 * 1024;
const ARENA_BYTES: u64 = 64 << 20;
/// What glibc's main arena asks `sbrk` for beyond a request (`M_TOP_PAD`'s default).
const TOP_PAD: u64 = 128 * 1024;

impl SimHeap {
    /// `populate`: map memory as it is allocated (the program initialises what it allocates
    /// before the measured phase); `kind`: backing of every region.
    pub fn new(pid: u16, kind: MapKind, populate: bool) -> SimHeap {
        SimHeap {
            pid,
            kind,
            arena_next: 0,
            arena_end: 0,
            populate,
        }
    }

    /// Allocate `bytes` aligned to `align` (a power of two up to 4096).
    pub fn alloc(
        &mut self,
        os: &mut dyn AddressSpaces,
        bytes: u64,
        align: u64,
    ) -> Result<VirtAddr> {
        let bytes = bytes.max(1);
        if bytes >= MMAP_THRESHOLD {
            let va = os.mmap(self.pid, bytes, self.kind)?;
            if self.populate {
                os.populate(self.pid, va, bytes)?;
            }
            return Ok(va);
        }
        self.small(os, bytes, align)
    }

    /// `bytes` from the arena (the brk heap, or an `mmap`ed arena).
    fn small(&mut self, os: &mut dyn AddressSpaces, bytes: u64, align: u64) -> Result<VirtAddr> {
        let start = self.arena_next.div_ceil(align) * align;
        if start + bytes > self.arena_end || self.arena_end == 0 {
            // The heap grows by what the request lacks, a page multiple, plus glibc's pad.
            let short = match self.arena_end {
                0 => bytes + align,
                end => (start + bytes).saturating_sub(end),
            };
            let grow = page_rounded(short + TOP_PAD);
            if let Some(va) = os.sbrk(self.pid, grow, self.kind)? {
                if va.0 != self.arena_end {
                    // The first growth, or another heap grew the break in between.
                    self.arena_next = va.0;
                }
                self.arena_end = va.0 + grow;
                return self.small(os, bytes, align);
            }
            let va = os.mmap(self.pid, ARENA_BYTES, self.kind)?;
            self.arena_next = va.0;
            self.arena_end = va.0 + ARENA_BYTES;
            return self.small(os, bytes, align);
        }
        self.arena_next = start + bytes;
        if self.populate {
            os.populate(self.pid, VirtAddr(start), bytes)?;
        }
        Ok(VirtAddr(start))
    }

    /// `n` objects of `elem` bytes that the program allocates one by one (tree nodes, a
    /// vertex's edge list, a netlist element's fan-out), addressed as one array: glibc serves
    /// each small `malloc` from the main arena in turn, so on the brk heap they lie one after
    /// the other. Under a layout without a brk heap, one allocation, as [`SimHeap::array`].
    pub fn objects(&mut self, os: &mut dyn AddressSpaces, n: u64, elem: u64) -> Result<Array> {
        if os.sbrk(self.pid, 0, self.kind)?.is_none() {
            return self.array(os, n, elem);
        }
        let base = self.small(os, n.max(1) * elem, elem.next_power_of_two().min(4096))?;
        Ok(Array { base, elem, len: n })
    }

    /// An array of `n` elements of `elem` bytes.
    pub fn array(&mut self, os: &mut dyn AddressSpaces, n: u64, elem: u64) -> Result<Array> {
        let base = self.alloc(os, n.max(1) * elem, elem.next_power_of_two().min(4096))?;
        Ok(Array { base, elem, len: n })
    }
}

/// A simulated array: address arithmetic only, no host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array {
    pub base: VirtAddr,
    pub elem: u64,
    pub len: u64,
}

impl Array {
    #[inline]
    pub fn at(&self, i: u64) -> VirtAddr {
        debug_assert!(i < self.len.max(1));
        VirtAddr(self.base.0 + i * self.elem)
    }
    pub fn bytes(&self) -> u64 {
        self.elem * self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut s: ThreadedSource, cap: usize) -> Vec<Record> {
        let mut all = Vec::new();
        let mut buf = Vec::with_capacity(cap);
        loop {
            s.fill(&mut buf).unwrap();
            if buf.is_empty() {
                return all;
            }
            all.extend_from_slice(&buf);
        }
    }

    #[test]
    fn budget_stops_an_endless_algorithm_and_deps_are_distances() {
        let s = ThreadedSource::spawn(3, 10_001, |e| loop {
            e.instr(2);
            let a = e.load(VirtAddr(0x1000), 8)?;
            e.load_dep(VirtAddr(0x2000), 8, a)?;
        });
        let recs = drain(s, 777);
        assert_eq!(recs.len(), 10_001);
        assert_eq!(recs[1].dep, 1);
        assert_eq!(recs[0].instr_delta, 2);
        assert_eq!(recs[1].instr_delta, 0);
        assert!(recs.iter().all(|r| r.pid == 3));
    }

    #[test]
    fn an_algorithm_that_gives_up_early_is_an_error_and_one_that_finishes_is_not() {
        let gives_up = ThreadedSource::spawn(0, 1000, |e| {
            for i in 0..10u64 {
                e.load(VirtAddr(i * 64), 8)?;
            }
            Err(Stop) // e.g. its node pool ran out
        });
        let mut s = gives_up;
        let mut buf = Vec::with_capacity(100);
        s.fill(&mut buf).unwrap();
        assert_eq!(buf.len(), 10);
        let err = s.fill(&mut buf).unwrap_err().to_string();
        assert!(err.contains("stopped after 10 of 1000"), "{err}");
        let finishes = ThreadedSource::spawn(0, 1000, |e| {
            e.load(VirtAddr(0), 8)?;
            Ok(())
        });
        assert_eq!(drain(finishes, 7).len(), 1);
    }

    #[test]
    fn a_source_that_is_never_read_never_runs_its_algorithm() {
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = ran.clone();
        drop(ThreadedSource::spawn(0, 10, move |_| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn the_region_of_interest_begins_at_the_record_after_the_mark() {
        // Set-up of 5000 stores (more than a batch), then the kernel.
        let make = |marks: bool| {
            let s = ThreadedSource::spawn(0, 8000, |e| {
                for i in 0..5000u64 {
                    e.store(VirtAddr(i * 8), 8)?;
                }
                e.roi();
                e.instr(3);
                e.barrier()?;
                loop {
                    e.load(VirtAddr(1 << 30), 8)?;
                }
            });
            if marks {
                s.marks_roi()
            } else {
                s
            }
        };
        for cap in [1, 999, 4096] {
            let mut s = make(true);
            assert_eq!(s.roi(), Roi::NotYet);
            let mut buf = Vec::with_capacity(cap);
            let mut all = Vec::new();
            loop {
                s.fill(&mut buf).unwrap();
                if buf.is_empty() {
                    break;
                }
                all.extend_from_slice(&buf);
                // Known exactly when the first record of the region has been read.
                let read_it = all.len() > 5000;
                assert_eq!(s.roi() != Roi::NotYet, read_it, "cap {cap}");
            }
            assert_eq!(s.roi(), Roi::At(5000));
            assert_eq!(all[5000].op, Op::Load);
            assert_eq!(all[5000].instr_delta, 3);
            // The budget is the region's: the set-up comes on top.
            assert_eq!(all.len(), 5000 + 8000, "cap {cap}");
            assert_eq!(s.len_hint(), Some(13_000));
        }
        // A budget that ends inside the batch the region starts in.
        let tiny = ThreadedSource::spawn(0, 3, |e| {
            for i in 0..5000u64 {
                e.store(VirtAddr(i * 8), 8)?;
            }
            e.roi();
            loop {
                e.load(VirtAddr(1 << 30), 8)?;
            }
        });
        let mut tiny = tiny.marks_roi();
        assert_eq!(tiny.len_hint(), None);
        assert_eq!(drain_all(&mut tiny).len(), 5003);
        // A source that does not mark it is all region of interest.
        assert_eq!(make(false).roi(), Roi::At(0));
    }

    #[test]
    fn only_a_threads_first_mark_counts() {
        // A kernel that marks after its initialisation on every run, runs far shorter than a
        // batch: the region begins after the first run's initialisation.
        let mut s = ThreadedSource::spawn(0, 1000, |e| loop {
            for i in 0..10u64 {
                e.store(VirtAddr(i * 8), 8)?;
            }
            e.roi();
            for _ in 0..5 {
                e.load(VirtAddr(1 << 30), 8)?;
            }
        })
        .marks_roi();
        let recs = drain_all(&mut s);
        assert_eq!(s.roi(), Roi::At(10));
        assert_eq!(recs[10].op, Op::Load);
    }

    #[test]
    fn in_a_team_the_first_thread_to_mark_starts_the_region() {
        let mut s = ThreadedSource::team(0, 20_000, 3, |t| {
            move |e: &mut Emitter| {
                // Thread t has 300 * (t + 1) records of set-up.
                for i in 0..300 * (t as u64 + 1) {
                    e.store(VirtAddr(i * 8), 8)?;
                }
                e.roi();
                loop {
                    e.load(VirtAddr(1 << 30), 8)?;
                }
            }
        })
        .marks_roi();
        let recs = drain_all(&mut s);
        let Roi::At(at) = s.roi() else {
            panic!("no region of interest")
        };
        // Thread 0's set-up ends first: 256 records in its first turn, 44 in its second,
        // after a turn each of threads 1 and 2.
        assert_eq!(at, 256 * 3 + 44);
        assert_eq!(
            (recs[at as usize].core, recs[at as usize].op),
            (0, Op::Load)
        );
        assert!(recs[..at as usize].iter().all(|r| r.op == Op::Store));
    }

    fn drain_all(s: &mut ThreadedSource) -> Vec<Record> {
        crate::workload::testutil::drain(s, 1000)
    }

    #[test]
    fn stream_is_independent_of_batching() {
        let make = || {
            ThreadedSource::spawn(0, 50_000, |e| {
                for i in 0..100_000u64 {
                    e.instr((i % 7) as u32);
                    e.store(VirtAddr(i * 64), 8)?;
                }
                Ok(())
            })
        };
        assert_eq!(drain(make(), 1), drain(make(), 5000));
    }

    use crate::workload::testutil::{max_lead, per_core};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    type Body = dyn Fn(&mut Emitter) -> std::result::Result<(), Stop> + Send + Sync;

    /// A team of `threads` running `body` each, drained; with where its barriers opened.
    fn team(threads: u32, budget: u64, body: Arc<Body>) -> (Vec<Record>, Vec<u64>) {
        let mut s = ThreadedSource::team(5, budget, threads, |_| {
            let body = body.clone();
            move |e: &mut Emitter| body(e)
        });
        let mut all = Vec::new();
        let mut buf = Vec::with_capacity(1000);
        loop {
            s.fill(&mut buf).unwrap();
            if buf.is_empty() {
                return (all, s.barrier_positions().to_vec());
            }
            all.extend_from_slice(&buf);
        }
    }

    #[test]
    fn static_share_splits_like_libgomp() {
        let shares: Vec<_> = (0..4).map(|t| static_share(10..20, t, 4)).collect();
        assert_eq!(shares, vec![10..13, 13..16, 16..18, 18..20]);
        assert_eq!(static_share(0..2, 3, 4), 2..2);
        assert_eq!(static_share(0..7, 0, 1), 0..7);
        for n in 0..40 {
            let mut next = 0;
            for t in 0..7 {
                let s = static_share(0..n, t, 7);
                assert_eq!(s.start, next);
                next = s.end;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn team_threads_carry_their_core_and_count_in_their_own_stream() {
        let (recs, _) = team(
            4,
            u64::MAX,
            Arc::new(|e: &mut Emitter| {
                let me = e.thread() as u64;
                for i in 0..3000u64 {
                    e.instr(me as u32 + 1);
                    let a = e.load(VirtAddr((me << 32) + i * 64), 8)?;
                    e.store_dep(VirtAddr((me << 32) + i * 64 + 8), 8, a)?;
                }
                Ok(())
            }),
        );
        assert_eq!(recs.len(), 4 * 6000);
        assert!(recs.iter().all(|r| r.pid == 5));
        for (core, mine) in per_core(&recs) {
            assert!(core < 4);
            assert_eq!(mine.len(), 6000);
            for (local, (_, r)) in mine.iter().enumerate() {
                assert_eq!(r.vaddr.0 >> 32, core as u64);
                let (delta, dep) = if local % 2 == 0 {
                    (core as u32 + 1, 0)
                } else {
                    (0, 1)
                };
                assert_eq!(
                    (r.instr_delta, r.dep),
                    (delta, dep),
                    "core {core} record {local}"
                );
            }
        }
        // Turns of TURN records keep every thread within one turn of the others.
        assert!(max_lead(&recs, &[]) <= TURN as u64);
        assert_ne!(recs[0].core, recs[TURN].core);
    }

    #[test]
    fn barriers_order_the_merged_stream_and_unequal_phases_interleave_while_they_last() {
        // Thread t emits (t + 1) * (phase + 1) * 300 records in each of 5 phases.
        let (recs, barriers) = team(
            3,
            u64::MAX,
            Arc::new(|e: &mut Emitter| {
                let me = e.thread() as u64;
                for phase in 0..5u64 {
                    for i in 0..(me + 1) * (phase + 1) * 300 {
                        e.instr(1);
                        e.load(VirtAddr(phase << 40 | me << 32 | (i * 8)), 8)?;
                    }
                    e.barrier()?;
                }
                Ok(())
            }),
        );
        let phase_of = |r: &Record| r.vaddr.0 >> 40;
        assert!(recs.windows(2).all(|w| phase_of(&w[0]) <= phase_of(&w[1])));
        let starts: Vec<u64> = (1..5)
            .map(|p| recs.iter().position(|r| phase_of(r) == p).unwrap() as u64)
            .collect();
        // The last barrier opens after the last records: an empty phase.
        assert_eq!(barriers[..4], starts[..]);
        assert_eq!(barriers.len(), 5);
        // The first record after each barrier says so, and no other.
        let flagged: Vec<u64> = (0..recs.len() as u64)
            .filter(|&i| recs[i as usize].after_barrier())
            .collect();
        assert_eq!(flagged, starts);
        assert!(max_lead(&recs, &barriers) <= TURN as u64);
        // Without the barriers, the threads that work more would have run far ahead.
        assert!(max_lead(&recs, &[]) > 10 * TURN as u64);
    }

    #[test]
    fn share_computes_once_and_hands_every_thread_the_same_value() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let (recs, _) = team(
            4,
            u64::MAX,
            Arc::new(move |e: &mut Emitter| {
                for round in 0..3u64 {
                    let v = e.share(|| {
                        counted.fetch_add(1, Ordering::SeqCst);
                        0x1000 * (round + 1)
                    })?;
                    e.load(VirtAddr(*v), 8)?;
                }
                Ok(())
            }),
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let addrs: Vec<u64> = recs.iter().map(|r| r.vaddr.0).collect();
        assert_eq!(addrs, [[0x1000; 4], [0x2000; 4], [0x3000; 4]].concat());
    }

    #[test]
    fn a_thread_that_ends_leaves_the_team() {
        let (recs, _) = team(
            3,
            u64::MAX,
            Arc::new(|e: &mut Emitter| {
                let phases = if e.thread() == 1 { 1 } else { 4 };
                for phase in 0..phases {
                    e.load(VirtAddr(phase * 8), 8)?;
                    e.barrier()?;
                }
                Ok(())
            }),
        );
        let mine = per_core(&recs);
        assert_eq!(mine[&0].len(), 4);
        assert_eq!(mine[&1].len(), 1);
        assert_eq!(mine[&2].len(), 4);
    }

    #[test]
    fn a_team_stops_at_its_budget_and_its_threads_end() {
        let running = Arc::new(AtomicUsize::new(0));
        let count = running.clone();
        let (recs, _) = team(
            4,
            10_000,
            Arc::new(move |e: &mut Emitter| {
                struct Running(Arc<AtomicUsize>);
                impl Drop for Running {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, Ordering::SeqCst);
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
                let _running = Running(count.clone());
                // Thread 3 works far more per phase: the others wait at barriers when the
                // budget runs out.
                let n = if e.thread() == 3 { 5000 } else { 10 };
                loop {
                    for i in 0..n {
                        e.load(VirtAddr(i * 64), 8)?;
                    }
                    e.barrier()?;
                }
            }),
        );
        assert_eq!(recs.len(), 10_000);
        for _ in 0..1000 {
            if running.load(Ordering::SeqCst) == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("team threads still running after the source ended");
    }

    #[test]
    fn a_team_stream_is_deterministic() {
        let body: Arc<Body> = Arc::new(|e: &mut Emitter| {
            let me = e.thread() as u64;
            for phase in 0..20u64 {
                // Uneven work and host timing that differs from run to run.
                for i in 0..(phase * 37 + me * 101) % 900 {
                    if i % 97 == 0 {
                        std::thread::yield_now();
                    }
                    e.load(VirtAddr(me << 32 | phase << 20 | i), 8)?;
                }
                e.barrier()?;
            }
            Ok(())
        });
        let first = team(4, 30_000, body.clone());
        for _ in 0..3 {
            assert_eq!(team(4, 30_000, body.clone()), first);
        }
    }
}
