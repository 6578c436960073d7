//! The cache hierarchy L1D → L2 → LLC → DRAM that data and translation requests share.
//!
//! Levels are looked up in order; each level reached adds its latency; a miss at the LLC goes
//! to DRAM at the cycle it gets there, so bank queueing and row-buffer state see real timing.
//! Lines are filled into every level they missed in (non-inclusive, allocate on miss).

use super::cache::{Cache, CacheHierarchyConfig, CacheSnapshot, Lookup};
use super::dram::{Dram, Requester};
use super::kind::MemKind;
use super::sorted::{count_while, count_while_back};
use super::topology::Topology;
use crate::addr::PhysAddr;
use crate::mem::dram::DramConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
/// The cache level where a walker's requests enter the hierarchy (`mmu.walker_entry`).
pub enum WalkerEntry {
    L1d,
    L2,
    Llc,
}

/// Where a request was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    L1d = 0,
    L2 = 1,
    Llc = 2,
    Dram = 3,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::L1d, Level::L2, Level::Llc, Level::Dram];
    /// Names of the levels in stats, in order.
    pub const NAMES: [&'static str; 4] = ["l1", "l2", "llc", "dram"];

    /// Counts per level (`[l1, l2, llc, dram]`) as a stats map by level name.
    pub fn named_counts(counts: [u64; 4]) -> std::collections::BTreeMap<&'static str, u64> {
        Level::NAMES.into_iter().zip(counts).collect()
    }
}

impl WalkerEntry {
    pub fn level(self) -> Level {
        match self {
            WalkerEntry::L1d => Level::L1d,
            WalkerEntry::L2 => Level::L2,
            WalkerEntry::Llc => Level::Llc,
        }
    }
}

/// How the hierarchy simulates an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Caches and DRAM with their latencies: the measured run.
    Detailed,
    /// Fast-forward: the caches take in the lines accessed and report their latencies (the
    /// warming clock advances by them), DRAM is not visited (its banks' timing must not run
    /// ahead of the detailed run that follows).
    WarmCaches,
    /// Fast-forward without the caches: an access does nothing.
    Untouched,
}

/// Counters of the L1D's miss-status registers (`cache.l1d_mshr`), over all cores.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct MshrStats {
    /// L1D misses that found every MSHR busy and waited for one.
    pub waits: u64,
    /// Cycles those misses waited.
    pub wait_cycles: u64,
}

/// One core's L1D miss-status holding registers, as the intervals they are held for.
///
/// The core model computes each access's issue cycle out of program order in time: a younger
/// instruction's access can be issued earlier than an older one's, which waited for its
/// translation. A register is therefore not "busy until" one cycle but held over intervals,
/// and a miss known at cycle `at` waits only while every register is held *at that cycle*;
/// fills booked later in time do not delay it. Misses are not merged: a second access to a
/// line in flight hits, the line having been filled functionally at the first.
struct Mshrs {
    registers: usize,
    /// `(from, until)` of each miss holding a register, in order of `until` (the release).
    held: Vec<(u64, u64)>,
    /// No access of this core is issued before this cycle (its dispatch clock), so intervals
    /// ending by then can never delay one again and are dropped.
    floor: u64,
    /// The `from` of every interval in `held`, in order: with `held`'s releases, the
    /// registers held at a cycle are a difference of two counts (see [`Mshrs::wait`]).
    froms: Vec<u64>,
    /// How many intervals at the front of `held` ended by `floor`: released for every access
    /// from then on, so [`Mshrs::wait`] starts its count after them. They stay in the
    /// vectors until [`Mshrs::hold`] compacts them, as it always has.
    ended: usize,
}

impl Mshrs {
    fn new(registers: usize) -> Mshrs {
        Mshrs {
            registers: registers.max(1),
            held: Vec::new(),
            floor: 0,
            froms: Vec::new(),
            ended: 0,
        }
    }

    /// The cycles a miss known at cycle `at` waits until a register is free: while all are
    /// held at the candidate cycle, the candidate moves to the earliest release among them.
    #[inline]
    fn wait(&self, at: u64) -> u64 {
        let (held, froms) = (&self.held, &self.froms);
        let n = held.len();
        // The intervals that ended by the floor are released by `at` if it is not earlier.
        let ended = if at >= self.floor { self.ended } else { 0 };
        if n - ended < self.registers {
            return 0;
        }
        // Every interval ends after it begins, so those released by `t` (a prefix of `held`)
        // are among those begun by `t` (a prefix of `froms`), and the registers held at `t`
        // number the difference. It drops only at releases: the wait ends at `at` or at the
        // first release after which fewer than `registers` are held (what the search one
        // release at a time below finds, without its scans). Both counts are found from the
        // side where few intervals mostly lie: few of those still held at the floor are
        // released by `at` (a data access is issued a few cycles after dispatch), and few
        // begin after it. A few steps from there, then a bisection (a walk's accesses are
        // issued long after dispatch).
        let mut released = ended + count_while(&held[ended..], |&(_, until)| until <= at);
        if n - released < self.registers {
            // Fewer unreleased than registers, begun by `at` or not.
            return 0;
        }
        let mut begun = n - count_while_back(froms, |&from| from > at);
        if begun - released < self.registers {
            return 0;
        }
        loop {
            let t = held[released].1;
            while released < n && held[released].1 <= t {
                released += 1;
            }
            while begun < n && froms[begun] <= t {
                begun += 1;
            }
            if begun - released < self.registers {
                return t - at;
            }
        }
    }

    /// [`Mshrs::wait`] one release at a time: the reference its tests compare it with.
    #[cfg(test)]
    fn wait_by_releases(&self, at: u64) -> u64 {
        if self.held.len() < self.registers {
            return 0;
        }
        // In order of release, the intervals released by `t` are a prefix, skipped; among
        // the rest, those begun by `t` hold a register then, and the first of them found is
        // the earliest release; once `registers` are found the others cannot matter.
        let mut t = at;
        let mut released = self.held.partition_point(|&(_, until)| until <= t);
        loop {
            let mut holding = 0;
            let mut first_release = u64::MAX;
            for &(from, until) in &self.held[released..] {
                if from <= t {
                    if holding == 0 {
                        first_release = until;
                    }
                    holding += 1;
                    if holding == self.registers {
                        break;
                    }
                }
            }
            if holding < self.registers {
                return t - at;
            }
            t = first_release;
            released += self.held[released..].partition_point(|&(_, until)| until <= t);
        }
    }

    /// A register is held from cycle `from` until the fill returns at `until`.
    #[inline]
    fn hold(&mut self, from: u64, until: u64) {
        while self.ended < self.held.len() && self.held[self.ended].1 <= self.floor {
            self.ended += 1;
        }
        if self.held.len() >= 4 * self.registers {
            self.ended = 0;
            let floor = self.floor;
            self.held.retain(|&(_, until)| until > floor);
            // A burst issued at one cycle (a page copy: every line at once) does not move
            // the floor. Keep the intervals that end last, so that `wait` stays O(registers)
            // per miss; the dropped ones end first and can only delay requests issued
            // before the burst's.
            if self.held.len() >= 2 * self.registers {
                self.held
                    .sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
                self.held.truncate(self.registers);
                self.held.reverse();
            }
            self.froms.clear();
            self.froms.extend(self.held.iter().map(|&(from, _)| from));
            self.froms.sort_unstable();
        }
        // Misses mostly begin and return in the order they are issued: both go at or near the
        // end, found by searching back from it (where a bisection's loads wait on each other).
        let mut at = self.froms.len();
        while at > 0 && self.froms[at - 1] > from {
            at -= 1;
        }
        self.froms.insert(at, from);
        let mut at = self.held.len();
        while at > 0 && self.held[at - 1].1 > until {
            at -= 1;
        }
        self.held.insert(at, (from, until));
    }
}

/// The cache hierarchy and DRAM of a system: each core's private L1D and L2, the shared LLC
/// and DRAM. Accesses go through the private caches of the core [`Hierarchy::set_core`] last
/// selected (the system selects the core it steps), so the MMU and walkers of every scheme
/// take one `&mut Hierarchy` whatever the core count.
pub struct Hierarchy {
    /// `[L1D, L2]` of each core.
    private: Vec<[Cache; 2]>,
    /// Each core's L1D MSHRs.
    mshrs: Vec<Mshrs>,
    pub mshr_stats: MshrStats,
    llc: Cache,
    pub dram: Dram,
    core: usize,
    timing: Timing,
    /// The sockets and networks between the cores and the DRAM channels (`[topology]`):
    /// `None` for a flat machine, which then times exactly as before topologies existed.
    topology: Option<Topology>,
}

impl Hierarchy {
    pub fn new(
        cfg: &CacheHierarchyConfig,
        dram: &DramConfig,
        core_ghz: f64,
        cores: usize,
    ) -> Hierarchy {
        Hierarchy {
            private: (0..cores.max(1))
                .map(|_| [Cache::new(&cfg.l1d), Cache::new(&cfg.l2)])
                .collect(),
            mshrs: (0..cores.max(1))
                .map(|_| Mshrs::new(cfg.l1d.mshrs.unwrap_or(1) as usize))
                .collect(),
            mshr_stats: MshrStats::default(),
            llc: Cache::new(&cfg.llc),
            dram: Dram::new(dram, core_ghz),
            core: 0,
            timing: Timing::Detailed,
            topology: None,
        }
    }

    /// Place the cores and channels on sockets (`[topology]`): every DRAM read then pays
    /// the way from its core's socket to its channel's and back.
    pub fn set_topology(&mut self, topology: Topology) {
        self.topology = Some(topology);
    }

    pub fn topology(&self) -> Option<&Topology> {
        self.topology.as_ref()
    }

    /// A read of the line at `addr` by the memory controller of DRAM channel `from` at cycle
    /// `now`, straight to DRAM (no cache on the way): SPARTA's memory-side walks and data
    /// reads. Returns the cycles until the line is back at `from`'s controller. In a
    /// functional phase it does nothing and takes no time.
    pub fn controller_read(&mut self, from: u64, addr: PhysAddr, kind: MemKind, now: u64) -> u64 {
        if self.timing != Timing::Detailed {
            return 0;
        }
        let requester = if kind.is_translation() {
            Requester::Translation
        } else {
            Requester::Data
        };
        let to = self.dram.decode(addr).channel;
        let trip = match &mut self.topology {
            Some(t) => t.from_channel(from, to),
            None => 0,
        };
        trip + self.dram.access(addr, now + trip, requester) + trip
    }

    /// Simulate the following accesses as `timing` says (fast-forward, then detail). Every
    /// access of every scheme goes through here, so this one switch makes walks, in-memory
    /// TLB probes and data accesses alike functional.
    pub fn set_timing(&mut self, timing: Timing) {
        self.timing = timing;
    }

    /// Send the following accesses through the private caches of `core`.
    #[inline]
    pub fn set_core(&mut self, core: usize) {
        self.core = core;
    }

    /// Core `core` issues nothing before cycle `cycle` from now on (its dispatch clock): the
    /// MSHR intervals that ended by then are history.
    #[inline]
    pub fn core_clock(&mut self, core: usize, cycle: u64) {
        self.mshrs[core].floor = cycle;
        // DRAM is shared: its floor is the slowest core's.
        let floor = if self.mshrs.len() == 1 {
            cycle
        } else {
            self.mshrs.iter().map(|m| m.floor).min().unwrap_or(cycle)
        };
        self.dram.set_floor(floor);
    }

    /// Access `addr` starting at cache level `entry` at cycle `now`.
    /// Returns (latency in cycles, level that served it).
    #[inline(always)]
    pub fn access(
        &mut self,
        addr: PhysAddr,
        kind: MemKind,
        write: bool,
        now: u64,
        entry: Level,
    ) -> (u64, Level) {
        if self.timing == Timing::Untouched {
            return (0, Level::Dram);
        }
        let line = addr.line();
        let [l1d, l2] = &mut self.private[self.core];
        let llc = &mut self.llc;
        // The common case, inlined: a line the entry level recently found (a stream's next
        // word). A hit there is all of the access (no MSHR, no DRAM).
        let first = match entry {
            Level::L1d => &mut *l1d,
            Level::L2 => &mut *l2,
            _ => &mut *llc,
        };
        if first.access_recent(line, kind, write) {
            return (first.latency(), entry);
        }
        let mut latency = 0;
        let mut served = Level::Dram;
        // Dirty lines the fills evicted, by the level that evicted them.
        let mut evicted = [None; 3];
        // One loop, one call site of `Cache::access`: it stays inlined.
        for (level, dirty_victim) in evicted.iter_mut().enumerate().skip(entry as usize) {
            let cache = match level {
                0 => &mut *l1d,
                1 => &mut *l2,
                _ => &mut *llc,
            };
            latency += cache.latency();
            match cache.access(line, kind, write) {
                Lookup::Hit => {
                    served = Level::ALL[level];
                    break;
                }
                Lookup::Miss => {}
                Lookup::MissEvictedDirty(victim) => {
                    *dirty_victim = Some(victim);
                    // Its write-back searches the levels below once this access is done
                    // (after DRAM, on a miss): the host fetches their sets meanwhile.
                    if level == 0 {
                        l2.prefetch_set(victim);
                    }
                    llc.prefetch_set(victim);
                }
            }
        }
        if served == Level::L1d {
            return (latency, Level::L1d);
        }
        let done = self.beyond_l1d(addr, kind, now, entry, latency, served);
        if evicted != [None; 3] {
            // The victims leave when the fill arrives.
            self.write_back(evicted, now + done.0);
        }
        done
    }

    /// The lookup of a virtual L1D (`cache.l1d.addressing = "virtual"`) by core `core`,
    /// before any translation: if its L1D holds the line of `addr` (the physical address the
    /// virtual one maps to: see [`Cache::probe_hit`]), the hit is counted and its latency
    /// returned; otherwise `None`, nothing changed or counted, and the access must be
    /// translated and then [`Hierarchy::access`]ed. `None` in a translation-only run.
    #[inline]
    pub fn l1d_probe(
        &mut self,
        core: usize,
        addr: PhysAddr,
        kind: MemKind,
        write: bool,
    ) -> Option<u64> {
        if self.timing == Timing::Untouched {
            return None;
        }
        let l1d = &mut self.private[core][0];
        l1d.probe_hit(addr.line(), kind, write)
            .then(|| l1d.latency())
    }

    /// A data access whose translation was made at memory, at the partition holding `addr`
    /// (SPARTA, Fig 3d): the request went there by virtual address, and the data comes back
    /// from that partition's DRAM with the translation, the core's caches not searched (it
    /// could not look up a physical cache before knowing the physical address). The way to
    /// the channel and back, the DRAM read at cycle `now`, and the line put into the L1D
    /// (an L1D miss, [`Cache::install`]). Returns the latency.
    pub fn read_at_memory(&mut self, addr: PhysAddr, kind: MemKind, write: bool, now: u64) -> u64 {
        if self.timing == Timing::Untouched {
            return 0;
        }
        let (latency, _) = self.beyond_l1d(addr, kind, now, Level::Dram, 0, Level::Dram);
        if let Some(victim) = self.private[self.core][0].install(addr.line(), kind, write) {
            self.private[self.core][1].prefetch_set(victim);
            self.write_back([Some(victim), None, None], now + latency);
        }
        latency
    }

    /// [`Hierarchy::access`] by core `core` of a line its L1D found recently (a stream's next
    /// word): the hit counted, its latency. `None` (nothing changed) says only that it must
    /// `access`.
    #[inline(always)]
    pub fn l1d_repeat(
        &mut self,
        core: usize,
        addr: PhysAddr,
        kind: MemKind,
        write: bool,
    ) -> Option<u64> {
        if self.timing != Timing::Detailed {
            return None;
        }
        let l1d = &mut self.private[core][0];
        l1d.access_recent(addr.line(), kind, write)
            .then(|| l1d.latency())
    }

    /// `n` more accesses by core `core` to the line its L1D found last, hits counted as
    /// [`Hierarchy::l1d_repeat`] counts each (a write if any of them writes).
    #[inline(always)]
    pub fn l1d_rehits(&mut self, core: usize, addr: PhysAddr, kind: MemKind, write: bool, n: u64) {
        let found = self.private[core][0].rehit(addr.line(), kind, write, n);
        debug_assert!(found, "the line the L1D found last");
    }

    /// Write back the dirty lines evicted at each level (`evicted[level]`) at cycle `now`: each
    /// goes to the first level below that holds it, and one that no cache below holds is a
    /// DRAM write. Write-backs are off the access's path (write buffers): they cost it nothing
    /// but the DRAM bandwidth they take.
    #[cold]
    fn write_back(&mut self, evicted: [Option<u64>; 3], now: u64) {
        for (level, victim) in evicted.into_iter().enumerate() {
            let Some(line) = victim else { continue };
            let [_, l2] = &mut self.private[self.core];
            let absorbed = match level {
                0 => l2.absorb_writeback(line) || self.llc.absorb_writeback(line),
                1 => self.llc.absorb_writeback(line),
                _ => false,
            };
            if !absorbed && self.timing == Timing::Detailed {
                self.dram
                    .write(PhysAddr(line << crate::addr::LINE_SHIFT), now);
            }
        }
    }

    /// The part of an access that missed the L1D (or entered below it): the wait for an L1D
    /// MSHR, DRAM if no cache held the line. Kept out of line so the hit path of
    /// [`Hierarchy::access`] stays small enough to inline.
    #[inline(never)]
    fn beyond_l1d(
        &mut self,
        addr: PhysAddr,
        kind: MemKind,
        now: u64,
        entry: Level,
        mut latency: u64,
        served: Level,
    ) -> (u64, Level) {
        if self.timing == Timing::WarmCaches {
            // Fast-forward: no MSHR is held, and DRAM's banks must not run ahead of the
            // detailed run's clock.
            return (latency, served);
        }
        // A miss in the L1D needs one of its MSHRs from when the miss is known until the fill.
        let mshr_from = if entry == Level::L1d {
            let known = now + self.private[self.core][0].latency();
            let wait = self.mshrs[self.core].wait(known);
            if wait > 0 {
                self.mshr_stats.waits += 1;
                self.mshr_stats.wait_cycles += wait;
                latency += wait;
            }
            Some(known + wait)
        } else {
            None
        };
        if served == Level::Dram {
            let requester = if kind.is_translation() {
                Requester::Translation
            } else {
                Requester::Data
            };
            // The way to the channel's controller and back, if the machine has a topology.
            let trip = match &mut self.topology {
                Some(t) => t.one_way(self.core, self.dram.decode(addr).channel),
                None => 0,
            };
            latency += trip;
            latency += self.dram.access(addr, now + latency, requester);
            latency += trip;
        }
        if let Some(from) = mshr_from {
            self.mshrs[self.core].hold(from, now + latency);
        }
        (latency, served)
    }

    /// The cache of `level` of `core` (the LLC is the same for every core).
    pub fn cache_of(&self, core: usize, level: Level) -> &Cache {
        match level {
            Level::L1d => &self.private[core][0],
            Level::L2 => &self.private[core][1],
            _ => &self.llc,
        }
    }

    /// The stats of one level over all cores.
    pub fn snapshot(&self, level: Level) -> CacheSnapshot {
        match level {
            Level::L1d | Level::L2 => {
                Cache::combined(self.private.iter().map(|p| &p[level as usize]))
            }
            _ => self.llc.snapshot(),
        }
    }

    /// Fraction of the blocks of `level` (over all cores) holding translation metadata.
    pub fn translation_fraction(&self, level: Level) -> f64 {
        self.snapshot(level).translation_fraction
    }

    pub fn reset_stats(&mut self) {
        for core in 0..self.private.len() {
            self.reset_private_stats(core);
        }
        self.reset_shared_stats();
    }

    /// Restart the counters of `core`'s private caches (a program's own warm-up ended).
    pub fn reset_private_stats(&mut self, core: usize) {
        self.private[core].iter_mut().for_each(Cache::reset_stats);
    }

    /// Restart the counters of what the cores share: the LLC, DRAM, and the L1D MSHR waits
    /// (counted over all cores).
    pub fn reset_shared_stats(&mut self) {
        self.llc.reset_stats();
        self.dram.reset_stats();
        if let Some(t) = &mut self.topology {
            t.reset_stats();
        }
        self.mshr_stats = MshrStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assoc::Replacement;
    use crate::mem::cache::CacheConfig;

    fn level(size: u64, latency: u32, mshrs: Option<u32>) -> CacheConfig {
        CacheConfig {
            size,
            ways: 4,
            latency,
            replacement: Replacement::Lru,
            mshrs,
            addressing: Default::default(),
        }
    }

    /// One core with `mshrs` L1D MSHRs over a 1 GHz DRAM of 32 banks.
    fn hierarchy(mshrs: u32) -> Hierarchy {
        let caches = CacheHierarchyConfig {
            l1d: level(4096, 1, Some(mshrs)),
            l2: level(8192, 2, None),
            llc: level(16384, 3, None),
        };
        Hierarchy::new(&caches, &h_dram(), 1.0, 1)
    }

    /// One 1 GHz channel of 32 banks.
    fn h_dram() -> DramConfig {
        DramConfig {
            channels: 1,
            ranks: 1,
            banks: 32,
            bank_groups: 1,
            row_bytes: 8192,
            rows: Some(1024),
            mapping: "row:rank:bank:channel:column".into(),
            bank_xor: false,
            tck_ns: 1.0,
            tcl: 10,
            tcwl: 8,
            trcd: 10,
            trp: 10,
            tras: 20,
            burst_cycles: 1,
            // Column and activate spacing that bind nothing here: the MSHRs are under test.
            tccd_s: 1,
            tccd_l: 1,
            trrd_s: 1,
            trrd_l: 1,
            tfaw: 1,
            twr: 10,
            trtp: 5,
            twtr_s: 2,
            twtr_l: 2,
            rtw_turnaround: 1,
            trefi: 0,
            trfc: 0,
            write_queue: 64,
            write_high: 48,
            write_low: 16,
            controller_ns: 0.0,
        }
    }

    /// `k` independent misses issued together, each to its own DRAM bank (so DRAM does not
    /// serialise them): the cycle the last one completes.
    fn last_fill(h: &mut Hierarchy, k: u64) -> u64 {
        (0..k)
            .map(|i| {
                let addr = PhysAddr(i * 8192);
                let (lat, lvl) = h.access(addr, MemKind::DATA, false, 0, Level::L1d);
                assert_eq!(lvl, Level::Dram);
                lat
            })
            .max()
            .unwrap()
    }

    #[test]
    fn mshrs_bound_overlapping_misses() {
        // A lone miss: 1 + 2 + 3 cycles of lookups, then an empty-row DRAM read.
        let single = last_fill(&mut hierarchy(1), 1);
        for (mshrs, k) in [(4u32, 16u64), (8, 16), (3, 10)] {
            let mut h = hierarchy(mshrs);
            let last = last_fill(&mut h, k);
            let rounds = k.div_ceil(mshrs as u64);
            // Each round starts when the previous one's fills return (after the L1D lookup);
            // within a round the channel's command bus issues one command (ACT, then read)
            // per clock, so a round's last fill is up to 2 × mshrs clocks after its first.
            let commands = 2 * mshrs as u64;
            assert!(
                last >= rounds * (single - 1) && last <= rounds * (single + commands),
                "{mshrs} MSHRs, {k} misses: last fill at {last}, lone miss {single}"
            );
            assert_eq!(h.mshr_stats.waits, k - mshrs as u64);
        }
        // Enough MSHRs: none waits, and the misses overlap but for the command bus (one
        // command a clock: an activate and a read each).
        let mut h = hierarchy(64);
        let last = last_fill(&mut h, 16);
        assert!(
            last > single && last <= single + 2 * 16,
            "{last} vs {single}"
        );
        assert_eq!(h.mshr_stats.waits, 0);
    }

    #[test]
    fn mshrs_held_later_in_time_do_not_delay_an_earlier_miss() {
        // Four misses issued at cycle 1000 hold both registers until after then; a miss the
        // out-of-order core issues at cycle 0 finds both free (the bookings start later) and
        // does not wait, while one issued inside their interval does.
        let mut h = hierarchy(2);
        for i in 0..2 {
            h.access(PhysAddr(i * 8192), MemKind::DATA, false, 1000, Level::L1d);
        }
        let waits = h.mshr_stats.waits;
        h.access(PhysAddr(5 * 8192), MemKind::DATA, false, 0, Level::L1d);
        assert_eq!(h.mshr_stats.waits, waits);
        h.access(PhysAddr(6 * 8192), MemKind::DATA, false, 1001, Level::L1d);
        assert_eq!(h.mshr_stats.waits, waits + 1);
    }

    #[test]
    fn mshr_wait_agrees_with_release_by_release() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |bound: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % bound
        };
        for registers in [1, 2, 3, 12] {
            let mut m = Mshrs::new(registers);
            let mut clock = 0;
            for _ in 0..20_000 {
                clock += next(3);
                m.floor = clock;
                // Mostly in order, sometimes issued out of order (earlier, or much later as
                // a walk's accesses are).
                let late = if next(8) == 0 { next(1000) } else { 0 };
                let at = clock + next(40) + late - if next(4) == 0 { next(clock + 1) } else { 0 };
                let wait = m.wait(at);
                assert_eq!(
                    wait,
                    m.wait_by_releases(at),
                    "{registers} registers at {at}"
                );
                let from = at + wait;
                m.hold(from, from + 1 + next(300));
            }
        }
    }

    #[test]
    fn a_remote_channel_adds_the_way_there_and_back() {
        use crate::mem::topology::{Links, Topology, TopologyConfig};
        // Two channels at the top of the address (channel-first mapping), one per socket.
        let build = |topology: bool| {
            let mut h = hierarchy(8);
            h.dram = Dram::new(
                &DramConfig {
                    channels: 2,
                    mapping: "channel:row:rank:bank:column".into(),
                    ..h_dram()
                },
                1.0,
            );
            if topology {
                let cfg = TopologyConfig {
                    sockets: 2,
                    noc_ns: 7.0,
                    link_ns: 30.0,
                    links: Links::Full,
                    core_sockets: vec![0],
                };
                h.set_topology(Topology::new(&cfg, 2, 1.0));
            }
            h
        };
        let half = 1024 * 32 * 8192; // rows x banks x row bytes: channel 1 starts here
        for (addr, one_way) in [(0u64, 7u64), (half, 7 + 30 + 7)] {
            let (flat, _) =
                build(false).access(PhysAddr(addr), MemKind::DATA, false, 0, Level::L1d);
            let mut h = build(true);
            let (lat, lvl) = h.access(PhysAddr(addr), MemKind::DATA, false, 0, Level::L1d);
            assert_eq!(lvl, Level::Dram);
            assert_eq!(lat, flat + 2 * one_way, "{addr:#x}");
            // The controller of channel 1 reading its own channel crosses nothing; channel
            // 0's reading it crosses both networks and the link.
            let c1 = build(false).controller_read(1, PhysAddr(addr + 64), MemKind::DATA, 0);
            let mut h = build(true);
            assert_eq!(
                h.controller_read(1, PhysAddr(addr + 64), MemKind::DATA, 0),
                c1 + if addr == 0 { 2 * 44 } else { 0 }
            );
        }
    }

    #[test]
    fn hits_and_fast_forward_take_no_mshr() {
        let mut h = hierarchy(1);
        let a = PhysAddr(0);
        h.access(a, MemKind::DATA, false, 0, Level::L1d);
        // The line is in the L1D now: a hit needs no MSHR even while the miss is in flight.
        assert_eq!(
            h.access(a, MemKind::DATA, false, 1, Level::L1d),
            (1, Level::L1d)
        );
        h.set_timing(Timing::WarmCaches);
        h.access(PhysAddr(1 << 20), MemKind::DATA, false, 0, Level::L1d);
        assert_eq!(h.mshr_stats.waits, 0);
        // Requests entering below the L1D (a walker at the L2) do not use its MSHRs.
        h.set_timing(Timing::Detailed);
        for i in 0..4 {
            h.access(PhysAddr((i + 8) << 20), MemKind::DATA, false, 0, Level::L2);
        }
        assert_eq!(h.mshr_stats.waits, 0);
    }
}

#[cfg(test)]
mod at_memory_tests {
    //! The L1D lookups of SPARTA's accelerators: a virtual L1D's probe before translation,
    //! and data that comes back from memory with a memory-side translation.
    use super::*;
    use crate::addr::PhysAddr;

    fn one_core() -> Hierarchy {
        let cfg: crate::sim::SimConfig =
            crate::sim::SimConfig::load("accel-conventional", &[]).expect("preset");
        Hierarchy::new(&cfg.cache, &cfg.dram, cfg.core.frequency_ghz, 1)
    }

    #[test]
    fn a_probe_counts_only_its_hits() {
        let mut h = one_core();
        let a = PhysAddr(0x12340);
        assert_eq!(h.l1d_probe(0, a, MemKind::DATA, false), None);
        let s = h.snapshot(Level::L1d);
        assert_eq!(
            (s.hits, s.misses),
            (0, 0),
            "a probe that misses changes nothing"
        );
        h.access(a, MemKind::DATA, false, 0, Level::L1d);
        assert_eq!(h.l1d_probe(0, a, MemKind::DATA, true), Some(2));
        let s = h.snapshot(Level::L1d);
        assert_eq!((s.hits, s.misses), (1, 1));
    }

    #[test]
    fn data_read_at_memory_skips_the_l1d_and_fills_it() {
        let mut h = one_core();
        let a = PhysAddr(0x12340);
        // The line is in the L1D, but the access cannot look it up: it pays DRAM.
        h.access(a, MemKind::DATA, false, 0, Level::L1d);
        let latency = h.read_at_memory(a, MemKind::DATA, true, 10_000);
        assert!(latency > 20, "{latency} cycles");
        let s = h.snapshot(Level::L1d);
        assert_eq!((s.hits, s.misses), (0, 2));
        // A line that was not there is put there, dirty: the next access hits.
        let b = PhysAddr(0x9_0000);
        h.read_at_memory(b, MemKind::DATA, true, 20_000);
        assert_eq!(
            h.access(b, MemKind::DATA, false, 30_000, Level::L1d),
            (2, Level::L1d)
        );
        assert_eq!(h.snapshot(Level::L1d).hits, 1);
    }
}
