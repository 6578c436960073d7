//! GUPS, the HPCC RandomAccess benchmark: `table[ran & (n-1)] ^= ran` with `ran` from the
//! benchmark's shift-register generator (polynomial 0x7). Each update is a load and a store of the
//! same random 8-byte word, so at large table sizes nearly every update misses every TLB.

use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use crate::trace::{Op, Record, RecordSource};
use serde::{Deserialize, Serialize};

/// The RandomAccess generator polynomial.
const POLY: u64 = 0x7;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GupsConfig {
    /// Table size in bytes (a power of two, as in HPCC).
    #[serde(default = "default_table")]
    pub table_bytes: u64,
    /// Memory references to emit (two per update).
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the memory before the first reference, as the benchmark's initialisation loop does,
    /// so page faults are not part of the measured run.
    #[serde(default = "default_populate")]
    pub populate: bool,
    /// Back the memory with explicit 1 GiB pages (`MAP_HUGETLB | MAP_HUGE_1GB`); falls back to
    /// smaller pages where no free 1 GiB block exists.
    #[serde(default)]
    pub hugetlb_1g: bool,
}

fn default_populate() -> bool {
    true
}

fn default_table() -> u64 {
    1 << 32
}
fn default_refs() -> u64 {
    10_000_000
}

impl GupsConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.table_bytes < 4096 || !self.table_bytes.is_power_of_two() {
            return Err(Error::config(
                format!("{path}.table_bytes"),
                format!(
                    "must be a power of two of at least 4096, got {}",
                    self.table_bytes
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }
}

pub struct Gups {
    base: VirtAddr,
    mask: u64,
    ran: u64,
    remaining: u64,
    total: u64,
    pid: u16,
    /// The store half of an update still to be emitted.
    pending_store: Option<u64>,
}

impl Gups {
    pub fn new(cfg: &GupsConfig, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<Gups> {
        let base = os.mmap(
            pid,
            cfg.table_bytes,
            if cfg.hugetlb_1g {
                MapKind::Huge1G
            } else {
                MapKind::Anon
            },
        )?;
        if cfg.populate {
            os.populate(pid, base, cfg.table_bytes)?;
        }
        // HPCC starts each stream at a point of the sequence; a seeded start plays that role.
        let ran = Rng::new(seed, rng::stream::WORKLOAD).next_u64() | 1;
        Ok(Gups {
            base,
            mask: cfg.table_bytes / 8 - 1,
            ran,
            remaining: cfg.references,
            total: cfg.references,
            pid,
            pending_store: None,
        })
    }

    #[inline]
    fn next_ran(&mut self) -> u64 {
        self.ran = (self.ran << 1) ^ if (self.ran as i64) < 0 { POLY } else { 0 };
        self.ran
    }
}

impl RecordSource for Gups {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        while buf.len() < buf.capacity() && self.remaining > 0 {
            self.remaining -= 1;
            let rec = match self.pending_store.take() {
                // The xor and the store: one instruction between load and store.
                Some(addr) => Record {
                    vaddr: VirtAddr(addr),
                    op: Op::Store,
                    size: 8,
                    pid: self.pid,
                    instr_delta: 1,
                    ..Default::default()
                },
                None => {
                    let ran = self.next_ran();
                    let addr = self.base.0 + (ran & self.mask) * 8;
                    self.pending_store = Some(addr);
                    // Shift, test, xor-poly, mask, and the loop branch before the load.
                    Record {
                        vaddr: VirtAddr(addr),
                        op: Op::Load,
                        size: 8,
                        pid: self.pid,
                        instr_delta: 5,
                        ..Default::default()
                    }
                }
            };
            buf.push(rec);
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}
