//! Infrastructure for workload generators written as ordinary algorithms.
//!
//! A generator allocates its data structures in the simulated process (`SimHeap`, through the OS
//! model's `mmap`, like malloc), then runs its algorithm on a producer thread, calling
//! [`Emitter::load`]/[`Emitter::store`] for every memory access and [`Emitter::instr`] for the
//! other instructions. Records travel to the simulator in batches over a bounded channel
//! ([`ThreadedSource`]). The record stream depends only on the algorithm and its seed, never on
//! thread timing, so runs stay deterministic; generation overlaps simulation on a second core.
//!
//! Algorithms propagate [`Stop`] with `?`: it means the reference budget is spent or the
//! simulator stopped reading, and unwinds the algorithm cleanly.

use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::trace::{Op, Record, RecordSource};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Records per batch sent to the simulator.
const BATCH: usize = 4096;
/// Batches in flight between producer and simulator.
const CHANNEL_DEPTH: usize = 8;

/// The generator must stop: budget spent, or nobody reads any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop;

/// Identifies an emitted record, for later records that depend on it (`dep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecId(u64);

pub struct Emitter {
    tx: SyncSender<Vec<Record>>,
    /// Emptied batches the reader hands back, so batches are reused rather than allocated.
    spare: Receiver<Vec<Record>>,
    batch: Vec<Record>,
    pid: u16,
    pending_instr: u32,
    emitted: u64,
    budget: u64,
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
        let dep = dep.map_or(0, |d| (id - d.0).min(u32::MAX as u64) as u32);
        self.batch.push(Record {
            vaddr,
            op,
            size,
            core: 0,
            pid: self.pid,
            instr_delta: std::mem::take(&mut self.pending_instr),
            dep,
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

    /// Records emitted so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    fn flush(&mut self) -> std::result::Result<(), Stop> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let next = match self.spare.try_recv() {
            Ok(mut v) => {
                v.clear();
                v
            }
            Err(_) => Vec::with_capacity(BATCH),
        };
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(full).map_err(|_| Stop)
    }
}

/// The generator's algorithm, not started yet.
type Algorithm = Box<dyn FnOnce(&mut Emitter) -> std::result::Result<(), Stop> + Send>;

/// How the producer thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The algorithm ran to its natural end, or the budget was spent.
    Finished,
    /// The algorithm gave up (`Stop`) with budget left: a preallocated structure ran out.
    StoppedEarly { emitted: u64 },
}

/// A `RecordSource` fed by a generator running on its own thread. The thread starts on the
/// first `fill`, so building a workload only to measure its footprint (`xlat workloads`) never
/// runs its algorithm.
pub struct ThreadedSource {
    pending: Option<(u16, Algorithm)>,
    rx: Option<Receiver<Vec<Record>>>,
    /// Where consumed batches go back to the producer for reuse.
    spare_tx: Option<SyncSender<Vec<Record>>>,
    current: Vec<Record>,
    pos: usize,
    total: u64,
    worker: Option<JoinHandle<Outcome>>,
}

impl ThreadedSource {
    /// Run `algorithm` on a producer thread for process `pid`, emitting at most `budget`
    /// records. The algorithm may loop forever; the budget stops it.
    pub fn spawn<F>(pid: u16, budget: u64, algorithm: F) -> ThreadedSource
    where
        F: FnOnce(&mut Emitter) -> std::result::Result<(), Stop> + Send + 'static,
    {
        ThreadedSource {
            pending: Some((pid, Box::new(algorithm))),
            rx: None,
            spare_tx: None,
            current: Vec::new(),
            pos: 0,
            total: budget,
            worker: None,
        }
    }

    fn start(&mut self) {
        let Some((pid, algorithm)) = self.pending.take() else {
            return;
        };
        let budget = self.total;
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        let (spare_tx, spare) = sync_channel(CHANNEL_DEPTH + 2);
        let worker = std::thread::Builder::new()
            .name("xlat-workload".into())
            .spawn(move || {
                let mut e = Emitter {
                    tx,
                    spare,
                    batch: Vec::with_capacity(BATCH),
                    pid,
                    pending_instr: 0,
                    emitted: 0,
                    budget,
                };
                let result = algorithm(&mut e);
                let delivered = e.flush().is_ok();
                if result.is_err() && delivered && e.emitted < e.budget {
                    Outcome::StoppedEarly { emitted: e.emitted }
                } else {
                    Outcome::Finished
                }
            })
            .expect("spawning the workload thread");
        self.rx = Some(rx);
        self.spare_tx = Some(spare_tx);
        self.worker = Some(worker);
    }

    /// The producer is done: report how it ended.
    fn join(&mut self) -> Result<()> {
        let Some(w) = self.worker.take() else {
            return Ok(());
        };
        match w.join() {
            Ok(Outcome::Finished) => Ok(()),
            Ok(Outcome::StoppedEarly { emitted }) => Err(Error::Workload(format!(
                "the workload stopped after {emitted} of {} references: a structure it \
                 preallocated (e.g. the node pool for updates) ran out; lower \
                 workload.references or workload.update_ratio",
                self.total
            ))),
            // A panic there is an engine bug: report it.
            Err(_) => Err(Error::Workload(
                "the workload generator thread panicked".into(),
            )),
        }
    }
}

impl RecordSource for ThreadedSource {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        self.start();
        let cap = buf.capacity().max(1);
        while buf.len() < cap {
            if self.pos == self.current.len() {
                match self.rx.as_ref().map(|rx| rx.recv()) {
                    Some(Ok(batch)) => {
                        let used = std::mem::replace(&mut self.current, batch);
                        if let Some(spare) = &self.spare_tx {
                            // Full (the producer has enough) or gone: just drop it.
                            let _ = spare.try_send(used);
                        }
                        self.pos = 0;
                    }
                    _ => {
                        if buf.is_empty() {
                            self.join()?;
                        }
                        break;
                    }
                }
            }
            let n = (cap - buf.len()).min(self.current.len() - self.pos);
            buf.extend_from_slice(&self.current[self.pos..self.pos + n]);
            self.pos += n;
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}

/// A malloc-like allocator over the simulated process's address space: large allocations get
/// their own `mmap` (as glibc does above its mmap threshold), small ones come from arenas.
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
        let start = self.arena_next.div_ceil(align) * align;
        if start + bytes > self.arena_end || self.arena_end == 0 {
            let va = os.mmap(self.pid, ARENA_BYTES, self.kind)?;
            self.arena_next = va.0;
            self.arena_end = va.0 + ARENA_BYTES;
            return self.alloc(os, bytes, align);
        }
        self.arena_next = start + bytes;
        if self.populate {
            os.populate(self.pid, VirtAddr(start), bytes)?;
        }
        Ok(VirtAddr(start))
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
}
