//! WalkPlan: the memory references of one page walk as sequential steps of parallel references
//! (docs/architecture.md), and its execution against the cache hierarchy.
//!
//! Timing of a step: its references are issued together at the cycle the step starts, and the
//! step ends when the last reference the walk *waits for* returns. By default the walk waits for
//! every reference (a radix level needs its entry; a probe that finds nothing must be seen to
//! find nothing). Two kinds are not waited for, though they are issued, counted, and occupy the
//! caches, MSHRs and DRAM like any other: references pushed with [`WalkPlan::push_background`]
//! (a Cuckoo Walk Table read that fills a CWC for later walks), and the other references of a
//! step whose answer one reference brought ([`WalkPlan::answered_by`]: the parallel probes of a
//! hashed table, where "the correct one determines the latency", Utopia §7).

use crate::addr::PhysAddr;
use crate::mem::{Hierarchy, Level, MemKind};
use serde::Serialize;

/// Most references any walk issues (a nested 2D walk issues 24).
pub const MAX_WALK_REFS: usize = 32;

#[derive(Clone, Copy, Debug, Default)]
pub struct WalkRef {
    pub addr: PhysAddr,
    pub kind: MemKind,
    pub step: u8,
    /// Whether the step waits for this reference to return (see the module doc).
    pub waited: bool,
}

/// A fixed-capacity plan: no heap allocation per walk.
#[derive(Clone, Debug)]
pub struct WalkPlan {
    refs: [WalkRef; MAX_WALK_REFS],
    len: usize,
    /// Fixed compute latency of the scheme (hashing, PWC lookup…), paid before the first step.
    pub fixed_cycles: u64,
    /// A walk that found no mapping because the VMM has not backed this guest-physical
    /// address (an EPT violation) rather than because the guest's table lacks it.
    pub host_fault: Option<PhysAddr>,
    /// A walk made at a memory controller rather than by the core (SPARTA's memory-side
    /// walker): the controller of the DRAM channel holding this address issues the
    /// references, straight to DRAM (no cache on the way, no network within its channel).
    pub controller: Option<PhysAddr>,
}

impl Default for WalkPlan {
    fn default() -> Self {
        WalkPlan {
            refs: [WalkRef::default(); MAX_WALK_REFS],
            len: 0,
            fixed_cycles: 0,
            host_fault: None,
            controller: None,
        }
    }
}

impl WalkPlan {
    pub fn clear(&mut self) {
        self.len = 0;
        self.fixed_cycles = 0;
        self.host_fault = None;
        self.controller = None;
    }

    /// Append a reference to step `step` (steps must be appended in non-decreasing order).
    pub fn push(&mut self, addr: PhysAddr, kind: MemKind, step: u8) {
        self.push_ref(WalkRef {
            addr,
            kind,
            step,
            waited: true,
        });
    }

    /// Append a reference issued with step `step` that the walk does not wait for: it goes
    /// through the hierarchy (and is counted) like the others, off the walk's critical path.
    pub fn push_background(&mut self, addr: PhysAddr, kind: MemKind, step: u8) {
        self.push_ref(WalkRef {
            addr,
            kind,
            step,
            waited: false,
        });
    }

    fn push_ref(&mut self, r: WalkRef) {
        debug_assert!(self.len == 0 || self.refs[self.len - 1].step <= r.step);
        self.refs[self.len] = r;
        self.len += 1;
    }

    /// Reference `index` (in push order) brings the walk's answer: its step ends when it
    /// returns, so the step's other references are no longer waited for.
    pub fn answered_by(&mut self, index: usize) {
        let step = self.refs[index].step;
        for (i, r) in self.refs[..self.len].iter_mut().enumerate() {
            if r.step == step && i != index {
                r.waited = false;
            }
        }
    }

    /// Append a reference as a step of its own, after every reference so far (a radix walk's
    /// entries, each needing the one before).
    #[inline]
    pub fn push_next(&mut self, addr: PhysAddr, kind: MemKind) {
        let step = match self.len {
            0 => 0,
            n => self.refs[n - 1].step + 1,
        };
        self.push(addr, kind, step);
    }

    pub fn refs(&self) -> &[WalkRef] {
        &self.refs[..self.len]
    }

    /// Issue the plan at cycle `now`; returns its latency. Each step's references go out
    /// together; the step takes as long as the slowest of those it waits for (all of them
    /// unless [`push_background`](Self::push_background) or
    /// [`answered_by`](Self::answered_by) said otherwise).
    pub fn execute(
        &self,
        mem: &mut Hierarchy,
        now: u64,
        entry: Level,
        stats: &mut WalkRefStats,
    ) -> u64 {
        let mut t = now + self.fixed_cycles;
        let refs = self.refs();
        let controller = self.controller.map(|at| mem.dram.decode(at).channel);
        let mut i = 0;
        while i < refs.len() {
            let step = refs[i].step;
            let mut slowest = 0;
            while i < refs.len() && refs[i].step == step {
                let (lat, level) = match controller {
                    Some(from) => (
                        mem.controller_read(from, refs[i].addr, refs[i].kind, t),
                        Level::Dram,
                    ),
                    None => mem.access(refs[i].addr, refs[i].kind, false, t, entry),
                };
                stats.by_level[level as usize] += 1;
                stats.by_kind[refs[i].kind.index()] += 1;
                if refs[i].waited {
                    slowest = slowest.max(lat);
                }
                i += 1;
            }
            t += slowest;
        }
        t - now
    }
}

/// Walk references by where they were served and by what they read.
#[derive(Clone, Debug, Default)]
pub struct WalkRefStats {
    pub by_level: [u64; 4],
    pub by_kind: [u64; crate::mem::kind::KINDS],
}

/// The `walk.refs` stats subtree.
#[derive(Clone, Debug, Serialize)]
pub struct WalkRefSnapshot {
    pub total: u64,
    pub by_level: std::collections::BTreeMap<&'static str, u64>,
    pub by_kind: std::collections::BTreeMap<&'static str, u64>,
}

impl WalkRefStats {
    pub fn add(&mut self, o: &WalkRefStats) {
        for (a, b) in self.by_level.iter_mut().zip(o.by_level) {
            *a += b;
        }
        for (a, b) in self.by_kind.iter_mut().zip(o.by_kind) {
            *a += b;
        }
    }

    pub fn snapshot(&self) -> WalkRefSnapshot {
        WalkRefSnapshot {
            total: self.by_level.iter().sum(),
            by_level: Level::named_counts(self.by_level),
            by_kind: MemKind::all()
                .filter(|k| self.by_kind[k.index()] > 0)
                .map(|k| (k.name(), self.by_kind[k.index()]))
                .collect(),
        }
    }
}
