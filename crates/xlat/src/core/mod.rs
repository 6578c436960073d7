//! Core timing: the ROB-window out-of-order model (docs/concepts.md) (and in-order as ROB = 1).
//!
//! Instructions dispatch in order, at most `width` per cycle, and an instruction cannot dispatch
//! before the one `rob_size` older has retired. A memory instruction's address is ready at
//! dispatch, or when the record it depends on (`dep`) completes; it completes after translation
//! plus data latency (stores: after translation, the store buffer hides the rest). Retirement is
//! in order. Non-memory instructions take one cycle and are accounted in bulk (the ROB keeps one
//! retire bound per instruction, a memset over at most a ROB's worth per record), while
//! overlapping independent misses (memory-level parallelism) and serialising dependent ones
//! (pointer chasing) both fall out.
//!
//! An instruction with several memory operands is one record per operand, the later ones
//! flagged [`Record::SAME_INSTRUCTION`](crate::trace::Record::SAME_INSTRUCTION): such an operand
//! takes no dispatch slot and no ROB entry of its own, but its own load- or store-queue entry
//! (a full queue holds the instruction, and the ones behind it, until one frees), and the
//! instruction retires when its last operand completes.

use serde::{Deserialize, Serialize};

/// Core timing model (docs/architecture.md).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    /// `ooo` (ROB-window out-of-order) or `inorder`.
    pub model: CoreModel,
    /// Instructions dispatched (and retired) per cycle.
    pub width: u32,
    /// Re-order buffer entries (ignored by `inorder`, which behaves as a ROB of 1).
    pub rob_size: u32,
    /// Load-queue entries: a load holds one from dispatch until it retires (or until its
    /// data returns, with `lq_release = "data"`), and cannot dispatch while all are held. A
    /// queue at least as large as the ROB never binds.
    pub lq_size: u32,
    /// When a load frees its load-queue entry: `retire` (default) when it retires, `data`
    /// when its data returns, as ChampSim's core does (`src/ooo_cpu.cc`,
    /// `handle_memory_return`): a load waiting to retire behind an older miss then no longer
    /// holds an entry.
    #[serde(default, skip_serializing_if = "LqRelease::is_retire")]
    pub lq_release: LqRelease,
    /// Store-queue entries, held by a store from dispatch until it retires.
    pub sq_size: u32,
    /// Loads that may start (translation, then the L1D) in one cycle: the load ports, or
    /// ChampSim's `lq_width`. 0 (the default): no bound beyond dispatch's `width`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub load_ports: u32,
    /// Stores that may start in one cycle (ChampSim's `sq_width`); 0 (the default): no bound.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub store_ports: u32,
    /// Core clock, used to convert DRAM nanoseconds to cycles.
    pub frequency_ghz: f64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// When a load's load-queue entry is freed (`core.lq_release`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LqRelease {
    /// At retirement (in order).
    #[default]
    Retire,
    /// When the load's data returns (out of order).
    Data,
}

impl LqRelease {
    fn is_retire(&self) -> bool {
        *self == LqRelease::Retire
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoreModel {
    Ooo,
    Inorder,
}

impl crate::config::Validate for CoreConfig {
    fn validate(&self) -> crate::error::Result<()> {
        use crate::config::nonzero;
        nonzero("core.width".into(), self.width as u64)?;
        nonzero("core.rob_size".into(), self.rob_size as u64)?;
        nonzero("core.lq_size".into(), self.lq_size as u64)?;
        nonzero("core.sq_size".into(), self.sq_size as u64)?;
        for (key, size) in [
            ("core.lq_size", self.lq_size),
            ("core.sq_size", self.sq_size),
        ] {
            if size > MAX_QUEUE {
                return Err(crate::error::Error::config(
                    key,
                    format!("must be at most {MAX_QUEUE}, got {size}"),
                ));
            }
        }
        if self.rob_size as usize >= RING_SLOTS {
            return Err(crate::error::Error::config(
                "core.rob_size",
                format!("must be less than {RING_SLOTS}, got {}", self.rob_size),
            ));
        }
        if !(self.frequency_ghz > 0.0 && self.frequency_ghz < 100.0) {
            return Err(crate::error::Error::config(
                "core.frequency_ghz",
                "must be in (0, 100)",
            ));
        }
        Ok(())
    }
}

/// Most load- or store-queue entries (cores have 72 to 192). A queue keeps a retire cycle per
/// entry, so its size is host memory; 65536 entries hold 16 operands (a gather's) of each of
/// the fewer than 4096 instructions a ROB has in flight, so a larger queue never binds.
const MAX_QUEUE: u32 = 1 << 16;

/// Completion times of this many recent memory records are kept for `dep` lookups; a record
/// further back has long retired.
const DEP_WINDOW: usize = 4096;

/// Capacity of the ROB's retire ring: it uses the first power of two of slots above the ROB's
/// size (which must be smaller). A fixed capacity, so that an index masked to it needs no
/// bounds check; the slots beyond those in use stay cold.
const RING_SLOTS: usize = 4096;

/// Retire cycles by instruction number: slot `k & mask`, for a `mask` of one less than a
/// power of two up to [`RING_SLOTS`].
struct Ring {
    slots: Box<[u64; RING_SLOTS]>,
    mask: u64,
}

impl Ring {
    /// A ring longer than `size` entries, every slot 0 (no bound).
    fn longer_than(size: u64) -> Ring {
        Ring {
            slots: Box::new([0; RING_SLOTS]),
            mask: (size + 1).next_power_of_two() - 1,
        }
    }

    #[inline(always)]
    fn slot(&self, k: u64) -> usize {
        (k & self.mask) as usize % RING_SLOTS
    }

    #[inline(always)]
    fn get(&self, k: u64) -> u64 {
        self.slots[self.slot(k)]
    }

    #[inline(always)]
    fn set(&mut self, k: u64, cycle: u64) {
        let slot = self.slot(k);
        self.slots[slot] = cycle;
    }

    /// Every slot in use.
    fn fill(&mut self, cycle: u64) {
        self.slots[..=self.mask as usize].fill(cycle);
    }
}

/// The recent memory records of one record stream (one software thread or program: the
/// records with one `Record::core` value), whose positions `dep` counts in.
struct DepHistory {
    /// Completion cycle of recent memory records, by record number modulo DEP_WINDOW.
    /// A fixed-size array, so the index (modulo its power-of-two length) needs no bounds check.
    completions: Box<[u64; DEP_WINDOW]>,
    records: u64,
}

impl DepHistory {
    fn new() -> DepHistory {
        DepHistory {
            completions: Box::new([0; DEP_WINDOW]),
            records: 0,
        }
    }
}

/// A load or store queue: the retire cycle of the last `len` loads (or stores), so the next
/// one can dispatch only once the one `len` older has retired and freed its entry.
///
/// Entries freed out of order (`lq_release = "data"`: a load frees its entry when its data
/// returns) are a pool instead: the next load takes the entry that frees first, whichever
/// load held it.
struct Queue {
    /// Retire cycles of the last `len` loads (stores), a ring; unused for a pool.
    retire: Vec<u64>,
    /// The ring slot of the next load (store): the entry it reuses. A wrapping index rather
    /// than a count modulo the (not necessarily power-of-two) size: no division per record.
    next: usize,
    /// The cycles each entry frees, smallest first, when entries free out of order.
    pool: Option<std::collections::BinaryHeap<std::cmp::Reverse<u64>>>,
}

impl Queue {
    fn new(len: u32) -> Queue {
        Queue {
            retire: vec![0; len.max(1) as usize],
            next: 0,
            pool: None,
        }
    }

    /// A queue whose entries free out of order.
    fn pool(len: u32) -> Queue {
        let free = (0..len.max(1)).map(|_| std::cmp::Reverse(0)).collect();
        Queue {
            retire: Vec::new(),
            next: 0,
            pool: Some(free),
        }
    }

    /// When the entry the next load (store) needs is free.
    #[inline(always)]
    fn free_at(&self) -> u64 {
        match &self.pool {
            None => self.retire[self.next],
            Some(p) => p.peek().map_or(0, |r| r.0),
        }
    }

    /// The load (store) dispatched last frees its entry at `cycle`.
    #[inline(always)]
    fn retire_last(&mut self, cycle: u64) {
        if let Some(p) = &mut self.pool {
            p.pop();
            p.push(std::cmp::Reverse(cycle));
            return;
        }
        self.retire[self.next] = cycle;
        self.next += 1;
        if self.next == self.retire.len() {
            self.next = 0;
        }
    }
}

/// Cycles a port calendar remembers: a memory instruction ready this long after (or before)
/// another of the same kind finds that one's slot forgotten. Loads in flight at once are
/// ready within a ROB's worth of dependent misses of each other, far less.
const PORT_CYCLES: usize = 4096;

/// The loads (or stores) started at each recent cycle, for a bound of `ports` a cycle. Memory
/// instructions are handed to the core in program order but become ready out of order (a
/// younger load whose address was ready early), so a ready instruction takes the first
/// cycle from its own that has a port left, before cycles taken by older ones if they left
/// room: a calendar of counts, one slot a cycle modulo `PORT_CYCLES`, each slot tagged with
/// its cycle so that a slot of a cycle long gone reads as free.
struct Ports {
    ports: u32,
    /// `(cycle, started)` by cycle modulo `PORT_CYCLES`.
    slots: Box<[(u64, u32); PORT_CYCLES]>,
}

impl Ports {
    /// `None` for no bound (`ports == 0`).
    fn new(ports: u32) -> Option<Ports> {
        (ports > 0).then(|| Ports {
            ports,
            slots: Box::new([(u64::MAX, 0); PORT_CYCLES]),
        })
    }

    /// Start one instruction ready at `ready`: returns the cycle it starts.
    #[inline]
    fn start(&mut self, ready: u64) -> u64 {
        let mut cycle = ready;
        loop {
            let slot = &mut self.slots[cycle as usize % PORT_CYCLES];
            if slot.0 != cycle {
                *slot = (cycle, 1);
                return cycle;
            }
            if slot.1 < self.ports {
                slot.1 += 1;
                return cycle;
            }
            cycle += 1;
        }
    }
}

pub struct Core {
    width: u64,
    rob: u64,
    lq: Queue,
    sq: Queue,
    /// Load and store ports (`core.load_ports`, `core.store_ports`), if bounded.
    load_ports: Option<Ports>,
    store_ports: Option<Ports>,
    /// Index of the next instruction to dispatch.
    instr: u64,
    dispatch_cycle: u64,
    dispatch_slots_used: u64,
    last_retire: u64,
    /// When the store dispatched last leaves the store buffer: stores commit to the L1D in
    /// order, each once it has retired and its line has arrived (write-allocate).
    last_store_commit: u64,
    /// The instruction dispatched last is a memory instruction (a further operand may join
    /// it); false at the start and after non-memory instructions.
    last_was_memory: bool,
    /// The retire bound of each of the last instructions, a ring: for instruction `k`, the
    /// retire cycle of the newest memory instruction at or before it (a non-memory
    /// instruction retires right behind it). The instruction dispatching reads the slot of
    /// the one `rob` older, so one slot per instruction is O(1) per instruction, with no
    /// search. More slots than the ROB has entries: a slot is the instruction's number
    /// masked, with no wrap test.
    retire_ring: Ring,
    /// The retire bound of the newest memory instruction (0 before the first): what a
    /// non-memory instruction's slot gets.
    memory_retire: u64,
    /// Dependence history of the stream running now, and of the others, by stream number
    /// (several streams share a core when threads or programs outnumber cores). The running
    /// one is kept apart so the common case, one stream, pays no lookup.
    deps: DepHistory,
    stream: u8,
    others: Vec<Option<DepHistory>>,
    pub stats: CoreStats,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreStats {
    pub memory_refs: u64,
    pub loads: u64,
    pub stores: u64,
    /// Cycles dispatch stalled because the ROB was full.
    pub rob_stall_cycles: u64,
    /// Cycles memory instructions waited for the record they depend on.
    pub dep_wait_cycles: u64,
    /// Cycles dispatch stalled because the load queue was full.
    pub lq_stall_cycles: u64,
    /// Cycles dispatch stalled because the store queue was full.
    pub sq_stall_cycles: u64,
    /// Cycles ready loads and stores waited for a port (`core.load_ports`, `store_ports`).
    pub port_wait_cycles: u64,
    /// Cycles the core waited at barriers for the other threads of its program, after its
    /// own work before the barrier had retired.
    pub barrier_wait_cycles: u64,
}

impl CoreStats {
    pub fn add(&mut self, o: &CoreStats) {
        self.memory_refs += o.memory_refs;
        self.loads += o.loads;
        self.stores += o.stores;
        self.rob_stall_cycles += o.rob_stall_cycles;
        self.dep_wait_cycles += o.dep_wait_cycles;
        self.lq_stall_cycles += o.lq_stall_cycles;
        self.sq_stall_cycles += o.sq_stall_cycles;
        self.port_wait_cycles += o.port_wait_cycles;
        self.barrier_wait_cycles += o.barrier_wait_cycles;
    }
}

impl Core {
    pub fn new(cfg: &CoreConfig) -> Core {
        let rob = match cfg.model {
            CoreModel::Ooo => cfg.rob_size as u64,
            CoreModel::Inorder => 1,
        };
        Core {
            width: cfg.width as u64,
            rob,
            lq: match cfg.lq_release {
                LqRelease::Retire => Queue::new(cfg.lq_size),
                LqRelease::Data => Queue::pool(cfg.lq_size),
            },
            sq: Queue::new(cfg.sq_size),
            load_ports: Ports::new(cfg.load_ports),
            store_ports: Ports::new(cfg.store_ports),
            instr: 0,
            dispatch_cycle: 0,
            dispatch_slots_used: 0,
            last_retire: 0,
            last_store_commit: 0,
            last_was_memory: false,
            retire_ring: Ring::longer_than(rob),
            memory_retire: 0,
            deps: DepHistory::new(),
            stream: 0,
            others: Vec::new(),
            stats: CoreStats::default(),
        }
    }

    pub fn instructions(&self) -> u64 {
        self.instr
    }

    /// Cycles so far: when the last instruction retires.
    pub fn cycles(&self) -> u64 {
        self.last_retire.max(self.dispatch_cycle)
    }

    /// When every instruction dispatched before the current memory instruction has retired
    /// (retirement is in order).
    /// The core's own clock: the cycle its next instruction dispatches at. A multi-core
    /// system steps the core whose clock is smallest.
    pub fn now(&self) -> u64 {
        self.dispatch_cycle
    }

    /// An interrupt (a TLB-shootdown IPI) takes `cycles` of this core's time: nothing
    /// dispatches until its handler returns.
    pub fn interrupt(&mut self, cycles: u64) {
        let resume = self.dispatch_cycle.max(self.last_retire) + cycles;
        self.refetch_from(resume);
    }

    /// The core waits at a barrier until `cycle`: once everything it dispatched has retired,
    /// nothing dispatches before then. Returns the cycles it waited (0 if it arrives later).
    pub fn wait_until(&mut self, cycle: u64) -> u64 {
        let wait = cycle.saturating_sub(self.cycles());
        if wait > 0 {
            self.refetch_from(cycle);
            self.stats.barrier_wait_cycles += wait;
        }
        wait
    }

    pub fn older_retired(&self) -> u64 {
        self.last_retire
    }

    /// A precise exception (page fault) of the current memory instruction was handled until
    /// `cycle`: the pipeline was flushed, and younger instructions dispatch from then on.
    pub fn refetch_from(&mut self, cycle: u64) {
        if cycle > self.dispatch_cycle {
            self.dispatch_cycle = cycle;
            self.dispatch_slots_used = 0;
        }
    }

    /// Enter `n` dispatching instructions in the retire ring. Returns a lower bound on when
    /// the instruction `rob` older than the last of them retires (the retirement of the
    /// newest memory instruction at or before it; 0 if there is none): the last one cannot
    /// dispatch before.
    #[inline(always)]
    fn enter_ring(&mut self, n: u64) -> u64 {
        let bound = self.memory_retire;
        let first = self.instr;
        let ring = &mut self.retire_ring;
        // A memory instruction's own slot is set when it completes.
        if n == 1 {
            ring.set(first, bound);
        } else if n > ring.mask {
            ring.fill(bound);
        } else {
            for k in first..first + n {
                ring.set(k, bound);
            }
        }
        // Before `rob` instructions have dispatched, this is a slot none has written yet
        // (the ring is longer than the ROB): 0, no bound.
        ring.get((first + n - 1).wrapping_sub(self.rob))
    }

    /// Dispatch `n` instructions in order; returns the dispatch cycle of the last.
    #[inline(always)]
    fn dispatch(&mut self, n: u64) -> u64 {
        if n == 0 {
            return self.dispatch_cycle;
        }
        let (mut cycle, mut used) = if n == 1 {
            // The common case, without a division.
            if self.dispatch_slots_used < self.width {
                (self.dispatch_cycle, self.dispatch_slots_used + 1)
            } else {
                (self.dispatch_cycle + 1, 1)
            }
        } else {
            let total = self.dispatch_slots_used + n;
            if total <= 2 * self.width {
                // A few instructions (the non-memory ones between two memory records, most
                // often): this cycle's slots or the next's, without a division.
                if total <= self.width {
                    (self.dispatch_cycle, total)
                } else {
                    (self.dispatch_cycle + 1, total - self.width)
                }
            } else {
                (
                    self.dispatch_cycle + (total - 1) / self.width,
                    (total - 1) % self.width + 1,
                )
            }
        };
        // In the first `rob` instructions this is 0 (see `enter_ring`): no stall.
        let free_at = self.enter_ring(n);
        self.instr += n;
        if free_at > cycle {
            self.stats.rob_stall_cycles += free_at - cycle;
            cycle = free_at;
            used = 1;
        }
        self.dispatch_cycle = cycle;
        self.dispatch_slots_used = used;
        cycle
    }

    /// Account `n` non-memory instructions (one cycle each).
    #[inline(always)]
    pub fn non_memory(&mut self, n: u32) {
        if n > 0 {
            self.last_was_memory = false;
            let d = self.dispatch(n as u64);
            self.last_retire = self.last_retire.max(d + 1);
        }
    }

    /// Dispatch one memory instruction (a store if `is_store`, else a load) of record stream
    /// `stream` that depends on the record `dep` positions back in that stream (0 = none).
    /// It needs a free load- (store-) queue entry besides its ROB entry. Returns the cycle
    /// its address is ready (when translation starts).
    ///
    /// With `joins` (the record's [`Record::joins_previous`](crate::trace::Record::joins_previous)),
    /// this is a further operand of the instruction dispatched last instead: no dispatch slot
    /// or ROB entry, only the queue entry; its address is ready when the instruction
    /// dispatched (or its dependence completes). The instruction dispatched last must be a
    /// memory instruction of the same stream (the record before this one on this core);
    /// otherwise the operand is an instruction of its own.
    #[inline(always)]
    pub fn issue_memory(&mut self, dep: u32, stream: u8, is_store: bool, joins: bool) -> u64 {
        let mut d = if joins && stream == self.stream && self.last_was_memory {
            self.dispatch_cycle
        } else {
            self.dispatch(1)
        };
        self.last_was_memory = true;
        let free = if is_store {
            self.sq.free_at()
        } else {
            self.lq.free_at()
        };
        if free > d {
            d = self.queue_full(free, d, is_store);
        }
        if stream != self.stream {
            self.switch_stream(stream);
        }
        let ready = self.address_ready(d, dep);
        let ports = if is_store {
            &mut self.store_ports
        } else {
            &mut self.load_ports
        };
        match ports {
            None => ready,
            Some(p) => {
                let start = p.start(ready);
                self.stats.port_wait_cycles += start - ready;
                start
            }
        }
    }

    /// When the address of a memory instruction dispatched at `d` is ready: then, or when
    /// the record `dep` back in its stream completes.
    #[inline(always)]
    fn address_ready(&mut self, d: u64, dep: u32) -> u64 {
        let h = &self.deps;
        let dep = dep as u64;
        if dep == 0 || dep > h.records || dep as usize >= DEP_WINDOW {
            return d;
        }
        let ready = h.completions[((h.records - dep) as usize) % DEP_WINDOW];
        if ready > d {
            self.stats.dep_wait_cycles += ready - d;
            ready
        } else {
            d
        }
    }

    /// The memory instruction that would dispatch at `d` finds its queue full until `free`:
    /// it dispatches then, and (in-order dispatch) the instructions behind it wait too. Not
    /// rare: a stream of loads that hit keeps the load queue full.
    #[inline(always)]
    fn queue_full(&mut self, free: u64, d: u64, is_store: bool) -> u64 {
        let stalls = if is_store {
            &mut self.stats.sq_stall_cycles
        } else {
            &mut self.stats.lq_stall_cycles
        };
        *stalls += free - d;
        self.dispatch_cycle = free;
        self.dispatch_slots_used = 1;
        free
    }

    /// Put away the running stream's dependence history and take out `stream`'s.
    #[cold]
    fn switch_stream(&mut self, stream: u8) {
        let n = self
            .others
            .len()
            .max(stream as usize + 1)
            .max(self.stream as usize + 1);
        self.others.resize_with(n, || None);
        let next = self.others[stream as usize]
            .take()
            .unwrap_or_else(DepHistory::new);
        let previous = std::mem::replace(&mut self.deps, next);
        self.others[self.stream as usize] = Some(previous);
        self.stream = stream;
    }

    /// Dispatch a memory record: its `n` non-memory instructions, then its memory
    /// instruction ([`Core::issue_memory`]). Returns the cycle its address is ready.
    #[inline(always)]
    pub fn dispatch_record(
        &mut self,
        n: u32,
        dep: u32,
        stream: u8,
        is_store: bool,
        joins: bool,
    ) -> u64 {
        self.non_memory(n);
        self.issue_memory(dep, stream, is_store, joins)
    }

    /// Count a memory record as [`Core::dispatch_record`] and [`Core::complete_access`] count
    /// it (its instructions, the memory reference, a load or a store), with no timing: a run
    /// with `sim.timing = "translation"`. The instruction count is the detailed run's: a
    /// further operand of the memory instruction before it adds none.
    #[inline(always)]
    pub fn count_untimed(&mut self, n: u32, stream: u8, is_store: bool, joins: bool) {
        if n > 0 {
            self.last_was_memory = false;
            self.instr += u64::from(n);
        }
        if !(joins && stream == self.stream && self.last_was_memory) {
            self.instr += 1;
        }
        self.last_was_memory = true;
        if stream != self.stream {
            self.switch_stream(stream);
        }
        self.stats.memory_refs += 1;
        if is_store {
            self.stats.stores += 1;
        } else {
            self.stats.loads += 1;
        }
    }

    /// The memory instruction issued last was translated by `data_at` and has its data
    /// `data_latency` later. A load completes then; a store once translated, and it holds its
    /// store-queue entry until it commits: after it retires and its line has arrived, in
    /// order with the stores before it (so the store queue bounds the store misses in flight).
    #[inline(always)]
    pub fn complete_access(&mut self, data_at: u64, data_latency: u64, is_store: bool) {
        let filled = data_at + data_latency;
        let complete = if is_store { data_at + 1 } else { filled };
        self.complete(complete, is_store, filled)
    }

    /// The memory instruction issued last completes at `complete` (a store's line arrives
    /// then too).
    #[inline(always)]
    pub fn complete_memory(&mut self, complete: u64, is_store: bool) {
        self.complete(complete, is_store, complete)
    }

    /// [`Core::complete_access`]: the instruction completes at `complete`, its line is in the
    /// L1D at `filled`.
    #[inline(always)]
    fn complete(&mut self, complete: u64, is_store: bool, filled: u64) {
        let h = &mut self.deps;
        h.completions[(h.records as usize) % DEP_WINDOW] = complete;
        h.records += 1;
        self.stats.memory_refs += 1;
        if is_store {
            self.stats.stores += 1;
        } else {
            self.stats.loads += 1;
        }
        self.last_retire = self.last_retire.max(complete);
        // This instruction's slot in the retire ring: that of the one dispatched last.
        self.retire_ring.set(self.instr - 1, self.last_retire);
        self.memory_retire = self.last_retire;
        if is_store {
            self.last_store_commit = self.last_store_commit.max(self.last_retire).max(filled);
            self.sq.retire_last(self.last_store_commit);
        } else if self.lq.pool.is_some() {
            // Freed when the data returns (`lq_release = "data"`).
            self.lq.retire_last(complete);
        } else {
            self.lq.retire_last(self.last_retire);
        }
    }

    pub fn reset_stats(&mut self) {
        self.stats = CoreStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(width: u32, rob: u32, model: CoreModel) -> Core {
        queues(width, rob, rob, rob, model)
    }

    fn queues(width: u32, rob: u32, lq: u32, sq: u32, model: CoreModel) -> Core {
        Core::new(&CoreConfig {
            model,
            width,
            rob_size: rob,
            lq_size: lq,
            lq_release: LqRelease::Retire,
            sq_size: sq,
            load_ports: 0,
            store_ports: 0,
            frequency_ghz: 2.0,
        })
    }

    /// `n` independent memory instructions (stores if `stores`) of `latency` cycles, each
    /// after `gap` non-memory instructions: the core's cycles.
    fn independent(c: &mut Core, n: u64, gap: u32, latency: u64, stores: bool) -> u64 {
        for _ in 0..n {
            c.non_memory(gap);
            let t = c.issue_memory(0, 0, stores, false);
            c.complete_memory(t + latency, stores);
        }
        c.cycles()
    }

    #[test]
    fn lq_release_at_data_lets_loads_past_an_older_miss() {
        // A 1000-cycle miss, then 60 loads of 10 cycles each through a 4-entry LQ and a
        // 64-entry ROB. Released at retirement, the short loads hold their entries behind the
        // miss: the fifth waits for it. Released when their data returns, they cycle through
        // the queue while the miss is outstanding, up to the ROB's bound.
        let run = |release: LqRelease| {
            let mut c = Core::new(&CoreConfig {
                model: CoreModel::Ooo,
                width: 4,
                rob_size: 64,
                lq_size: 4,
                lq_release: release,
                sq_size: 64,
                load_ports: 0,
                store_ports: 0,
                frequency_ghz: 2.0,
            });
            let t = c.issue_memory(0, 0, false, false);
            c.complete_memory(t + 1000, false);
            let mut last_issue = 0;
            for _ in 0..60 {
                last_issue = c.issue_memory(0, 0, false, false);
                c.complete_memory(last_issue + 10, false);
            }
            (last_issue, c.stats.lq_stall_cycles)
        };
        let (retire_issue, retire_stalls) = run(LqRelease::Retire);
        let (data_issue, data_stalls) = run(LqRelease::Data);
        // At retirement: the 4th short load onwards waits for the miss's retirement.
        assert!(retire_issue >= 1000, "{retire_issue}");
        assert!(retire_stalls >= 990, "{retire_stalls}");
        // At data return: every load issues long before the miss returns, 10 cycles per
        // group of four entries at most.
        assert!(data_issue < 200, "{data_issue}");
        assert!(
            data_stalls < retire_stalls / 4,
            "{data_stalls} vs {retire_stalls}"
        );
    }

    fn ported(width: u32, load_ports: u32, store_ports: u32) -> Core {
        Core::new(&CoreConfig {
            model: CoreModel::Ooo,
            width,
            rob_size: 224,
            lq_size: 224,
            lq_release: LqRelease::Retire,
            sq_size: 224,
            load_ports,
            store_ports,
            frequency_ghz: 2.0,
        })
    }

    #[test]
    fn ports_bound_the_memory_instructions_started_a_cycle() {
        // 4,000 independent 4-cycle loads (L1D hits) on a 4-wide core: 4 a cycle unbounded,
        // 2 a cycle through two load ports, 1 through one; stores are not held by load ports.
        let cycles = |load_ports: u32, stores: bool| {
            let mut c = ported(4, load_ports, 0);
            let n = independent(&mut c, 4000, 0, 4, stores);
            (n, c.stats.port_wait_cycles)
        };
        assert!(
            (1000..=1010).contains(&cycles(0, false).0),
            "{:?}",
            cycles(0, false)
        );
        assert!(
            (2000..=2010).contains(&cycles(2, false).0),
            "{:?}",
            cycles(2, false)
        );
        assert!(
            (4000..=4010).contains(&cycles(1, false).0),
            "{:?}",
            cycles(1, false)
        );
        assert_eq!(cycles(0, false).1, 0);
        assert!(cycles(2, false).1 > 0);
        assert!((1000..=1010).contains(&cycles(1, true).0));
        // Store ports bound stores alone.
        let mut c = ported(4, 0, 1);
        assert!((4000..=4010).contains(&independent(&mut c, 4000, 0, 4, true)));
        let mut c = ported(4, 0, 1);
        assert!((1000..=1010).contains(&independent(&mut c, 4000, 0, 4, false)));
    }

    #[test]
    fn a_load_ready_early_takes_a_port_left_free_before_later_ones() {
        // One port, four loads dispatched at cycle 0. The first starts at 0; the second waits
        // 100 cycles for it; the third, independent, takes the port free at cycle 1, not one
        // after the second's; the fourth the next, at 2.
        let mut c = ported(4, 1, 0);
        let first = c.issue_memory(0, 0, false, false);
        c.complete_memory(first + 100, false);
        let dependent = c.issue_memory(1, 0, false, false);
        c.complete_memory(dependent + 4, false);
        assert_eq!(dependent, first + 100);
        let early = c.issue_memory(0, 0, false, false);
        c.complete_memory(early + 4, false);
        assert_eq!((first, early), (0, 1));
        let same = c.issue_memory(0, 0, false, false);
        assert_eq!(same, 2);
        assert_eq!(c.stats.port_wait_cycles, 1 + 2);
    }

    #[test]
    fn load_queue_bounds_overlap() {
        // 64 loads of 100 cycles through an 8-entry LQ: 8 rounds of 100 cycles.
        let mut c = queues(4, 224, 8, 224, CoreModel::Ooo);
        let cycles = independent(&mut c, 64, 0, 100, false);
        assert!((800..=820).contains(&cycles), "{cycles}");
        assert!(c.stats.lq_stall_cycles >= 7 * 95, "{:?}", c.stats);
        assert_eq!(c.stats.sq_stall_cycles, 0);
        // Loads do not take store-queue entries, and stores not load-queue ones.
        let mut c = queues(4, 224, 224, 8, CoreModel::Ooo);
        assert!(independent(&mut c, 64, 0, 100, false) < 130);
        let mut c = queues(4, 224, 224, 8, CoreModel::Ooo);
        let cycles = independent(&mut c, 64, 0, 100, true);
        assert!((800..=820).contains(&cycles), "{cycles}");
        assert!(c.stats.sq_stall_cycles > 0 && c.stats.lq_stall_cycles == 0);
    }

    #[test]
    fn a_store_holds_its_entry_until_its_line_arrives() {
        // 64 store misses of 100 cycles through an 8-entry SQ: a store completes (and retires)
        // once translated, but commits to the L1D only when its line is there, so the queue
        // lets 8 misses be in flight: 8 rounds of 100 cycles, as for loads.
        let mut c = queues(4, 224, 224, 8, CoreModel::Ooo);
        for _ in 0..64 {
            let t = c.issue_memory(0, 0, true, false);
            c.complete_access(t, 100, true);
        }
        let cycles = c.cycles();
        assert!((700..=820).contains(&cycles), "{cycles}");
        assert!(c.stats.sq_stall_cycles >= 6 * 95, "{:?}", c.stats);
        // Store hits commit as they retire: no stall.
        let mut c = queues(4, 224, 224, 8, CoreModel::Ooo);
        for _ in 0..64 {
            let t = c.issue_memory(0, 0, true, false);
            c.complete_access(t, 1, true);
        }
        assert!(c.cycles() < 40, "{}", c.cycles());
    }

    #[test]
    fn queues_as_large_as_the_rob_never_bind() {
        for (gap, stores) in [(0, false), (3, false), (1, true), (7, true)] {
            let rob = 64;
            let mut bounded = queues(4, rob, rob, rob, CoreModel::Ooo);
            let mut huge = queues(4, rob, 4096, 4096, CoreModel::Ooo);
            let a = independent(&mut bounded, 500, gap, 150, stores);
            let b = independent(&mut huge, 500, gap, 150, stores);
            assert_eq!(a, b);
            assert_eq!(
                bounded.stats.lq_stall_cycles + bounded.stats.sq_stall_cycles,
                0
            );
        }
    }

    /// A further operand of an instruction takes no dispatch slot and no ROB entry: loads
    /// of two operands each dispatch at the rate of one-operand ones, and the instruction
    /// retires with its slower operand.
    #[test]
    fn further_operands_take_no_dispatch_slot() {
        // 8 instructions on a 2-wide core: 4 dispatch cycles, whatever their operands.
        let mut one = core(2, 224, CoreModel::Ooo);
        let mut two = core(2, 224, CoreModel::Ooo);
        let mut flat = core(2, 224, CoreModel::Ooo);
        let mut issued = Vec::new();
        for _ in 0..8 {
            let t = one.issue_memory(0, 0, false, false);
            one.complete_memory(t + 10, false);
            let t = two.issue_memory(0, 0, false, false);
            two.complete_memory(t + 10, false);
            let u = two.issue_memory(0, 0, true, true);
            issued.push((t, u));
            two.complete_memory(u + 30, true);
            // The same operands as instructions of their own.
            let t = flat.issue_memory(0, 0, false, false);
            flat.complete_memory(t + 10, false);
            let t = flat.issue_memory(0, 0, true, false);
            flat.complete_memory(t + 30, true);
        }
        assert_eq!(two.instructions(), 8);
        assert_eq!(flat.instructions(), 16);
        // Both operands of an instruction are issued at its dispatch cycle.
        assert!(issued.iter().all(|&(t, u)| t == u), "{issued:?}");
        assert_eq!(issued.last().unwrap().0, 3);
        assert_eq!(one.now(), 3);
        assert_eq!(two.now(), 3);
        assert_eq!(flat.now(), 7);
        // Retirement waits for the store (30 cycles) of the last instruction.
        assert_eq!(two.cycles(), 3 + 30);
        assert_eq!((two.stats.loads, two.stats.stores), (8, 8));

        // A ROB of 4 (and queues that do not bind): the fifth instruction waits for the
        // first to retire, its second load too.
        let mut c = queues(4, 4, 64, 64, CoreModel::Ooo);
        for i in 0..5 {
            let t = c.issue_memory(0, 0, false, false);
            c.complete_memory(t + 5, false);
            let u = c.issue_memory(0, 0, false, true);
            c.complete_memory(u + 100, false);
            if i == 4 {
                assert_eq!((t, u), (100, 100));
            }
        }
        assert_eq!(c.stats.rob_stall_cycles, 99);
    }

    /// An operand whose instruction is not the one dispatched last (after non-memory
    /// instructions, another stream's record, or at the start) dispatches on its own.
    #[test]
    fn operands_join_only_the_memory_instruction_just_dispatched() {
        let mut c = core(4, 224, CoreModel::Ooo);
        c.issue_memory(0, 0, false, true);
        assert_eq!(c.instructions(), 1);
        c.complete_memory(5, false);
        c.non_memory(1);
        c.issue_memory(0, 0, false, true);
        c.complete_memory(5, false);
        assert_eq!(c.instructions(), 3);
        c.issue_memory(0, 1, false, true);
        c.complete_memory(5, false);
        assert_eq!(c.instructions(), 4);
        c.issue_memory(0, 1, false, true);
        c.complete_memory(5, false);
        assert_eq!(c.instructions(), 4);
    }

    #[test]
    fn waiting_at_a_barrier() {
        let mut c = core(4, 224, CoreModel::Ooo);
        let t = c.issue_memory(0, 0, false, false);
        c.complete_memory(t + 50, false);
        assert_eq!(c.cycles(), 50);
        assert_eq!(c.wait_until(30), 0, "arrived after the others");
        assert_eq!(c.wait_until(80), 30);
        assert_eq!(c.now(), 80);
        assert_eq!(c.stats.barrier_wait_cycles, 30);
        assert_eq!(c.issue_memory(0, 0, false, false), 80);
    }

    #[test]
    fn width_bounds_throughput() {
        let mut c = core(4, 224, CoreModel::Ooo);
        c.non_memory(4000);
        assert_eq!(c.cycles(), 1000);
    }

    #[test]
    fn independent_misses_overlap_dependent_ones_do_not() {
        let mut ooo = core(4, 224, CoreModel::Ooo);
        for _ in 0..100 {
            let t = ooo.issue_memory(0, 0, false, false);
            ooo.complete_memory(t + 200, false);
        }
        let mut chase = core(4, 224, CoreModel::Ooo);
        for _ in 0..100 {
            let t = chase.issue_memory(1, 0, false, false);
            chase.complete_memory(t + 200, false);
        }
        assert!(ooo.cycles() < 300, "{}", ooo.cycles());
        assert!(chase.cycles() >= 100 * 200, "{}", chase.cycles());
    }

    #[test]
    fn rob_limits_overlap_and_inorder_serialises() {
        let run = |rob, model| {
            let mut c = core(4, rob, model);
            for _ in 0..64 {
                c.non_memory(3);
                let t = c.issue_memory(0, 0, false, false);
                c.complete_memory(t + 100, false);
            }
            c.cycles()
        };
        let big = run(256, CoreModel::Ooo);
        let small = run(16, CoreModel::Ooo);
        let inorder = run(256, CoreModel::Inorder);
        assert!(big < small && small < inorder, "{big} {small} {inorder}");
        assert!(inorder >= 64 * 100);
    }
}
