//! The cache hierarchy L1D → L2 → LLC → DRAM that data and translation requests share.
//!
//! Levels are looked up in order; each level reached adds its latency; a miss at the LLC goes
//! to DRAM at the cycle it gets there, so bank queueing and row-buffer state see real timing.
//! Lines are filled into every level they missed in (non-inclusive, allocate on miss).

use super::cache::Cache;
use super::cache::CacheHierarchyConfig;
use super::dram::{Dram, Requester};
use super::kind::MemKind;
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

pub struct Hierarchy {
    caches: [Cache; 3],
    pub dram: Dram,
}

impl Hierarchy {
    pub fn new(cfg: &CacheHierarchyConfig, dram: &DramConfig, core_ghz: f64) -> Hierarchy {
        Hierarchy {
            caches: [
                Cache::new(&cfg.l1d),
                Cache::new(&cfg.l2),
                Cache::new(&cfg.llc),
            ],
            dram: Dram::new(dram, core_ghz),
        }
    }

    /// Access `addr` starting at cache level `entry` at cycle `now`.
    /// Returns (latency in cycles, level that served it).
    #[inline]
    pub fn access(
        &mut self,
        addr: PhysAddr,
        kind: MemKind,
        write: bool,
        now: u64,
        entry: Level,
    ) -> (u64, Level) {
        let line = addr.line();
        let mut latency = 0;
        for level in (entry as usize)..3 {
            let cache = &mut self.caches[level];
            latency += cache.latency();
            if cache.access(line, kind, write) {
                return (latency, Level::ALL[level]);
            }
        }
        let requester = if kind.is_translation() {
            Requester::Translation
        } else {
            Requester::Data
        };
        latency += self.dram.access(addr, now + latency, requester);
        (latency, Level::Dram)
    }

    pub fn cache(&self, level: Level) -> &Cache {
        &self.caches[level as usize]
    }

    pub fn reset_stats(&mut self) {
        self.caches.iter_mut().for_each(Cache::reset_stats);
        self.dram.reset_stats();
    }
}
