//! GUPS, the HPCC RandomAccess benchmark: `table[ran & (n-1)] ^= ran` with `ran` from the
//! benchmark's shift-register generator (polynomial 0x7). Each update is a load and a store of the
//! same random 8-byte word, so at large table sizes nearly every update misses every TLB.
//! With `threads`, the updates are shared among software threads of the one process.

use super::emit::{static_share, MAX_THREADS};
use super::kernel::{KernelSource, KernelThread, Next};
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::AddressSpaces;
use crate::rng::{self, Rng};
use crate::trace::Op;
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
    /// Software threads of the one process, each on its own core (1 to 64).
    #[serde(default = "super::one_thread")]
    pub threads: u32,
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
        super::nonzero(format!("{path}.references"), self.references)?;
        super::threads_in_range(format!("{path}.threads"), self.threads)
    }
}

/// One step of the RandomAccess generator: multiply by x modulo the primitive polynomial
/// x^64 + x^2 + x + 1 over GF(2) (shift left, fold the carried-out bit back in).
#[inline]
fn step(ran: u64) -> u64 {
    (ran << 1) ^ if (ran as i64) < 0 { POLY } else { 0 }
}

/// `a * b` in GF(2)[x] / (x^64 + x^2 + x + 1).
fn mul(mut a: u64, b: u64) -> u64 {
    let mut product = 0;
    for bit in 0..64 {
        if b >> bit & 1 == 1 {
            product ^= a;
        }
        a = step(a);
    }
    product
}

/// `ran` after `n` steps, without taking them: a step multiplies by x, so `n` steps multiply by
/// x^n, raised by squaring. This is how HPCC_starts puts each thread at its own point of the
/// sequence.
fn skip(ran: u64, n: u64) -> u64 {
    let (mut result, mut x_power) = (ran, 2); // x^1
    for bit in 0..64 {
        if n >> bit & 1 == 1 {
            result = mul(result, x_power);
        }
        x_power = mul(x_power, x_power);
    }
    result
}

/// Map the table and start the updates. The run's updates (`references / 2`, rounded up) are
/// split among the threads as HPCC splits NUPDATE: each thread takes a contiguous share of the
/// one random sequence, starting its generator at the first number of its share, so the threads
/// together perform exactly the updates a single thread would. Every thread updates the one
/// shared table.
pub fn build(
    cfg: &GupsConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<KernelSource<Updater>> {
    let base = super::map_array(os, pid, cfg.table_bytes, cfg.hugetlb_1g, cfg.populate)?;
    // HPCC starts the sequence at a fixed point; a seeded start plays that role.
    let first = Rng::new(seed, rng::stream::WORKLOAD).next_u64() | 1;
    let mask = cfg.table_bytes / 8 - 1;
    let updates = cfg.references.div_ceil(2);
    let threads = cfg.threads.clamp(1, MAX_THREADS) as usize;
    let team = (0..threads)
        .map(|t| {
            let share = static_share(0..updates, t, threads);
            Updater {
                ran: skip(first, share.start),
                updates_left: share.end - share.start,
                pending_store: None,
                base: base.0,
                mask,
            }
        })
        .collect();
    Ok(KernelSource::new(pid, cfg.references, team))
}

/// One thread's share of the updates: `ran` steps through its part of the sequence, and each
/// update is a load and then a store of the word it picks.
pub struct Updater {
    ran: u64,
    updates_left: u64,
    /// The word the last load read, which the update's store writes next.
    pending_store: Option<u64>,
    base: u64,
    mask: u64,
}

impl KernelThread for Updater {
    #[inline]
    fn next(&mut self) -> Next {
        if let Some(addr) = self.pending_store.take() {
            // The xor between load and store.
            return Next::Access {
                vaddr: VirtAddr(addr),
                op: Op::Store,
                size: 8,
                instr_delta: 1,
            };
        }
        if self.updates_left == 0 {
            return Next::Done;
        }
        self.updates_left -= 1;
        self.ran = step(self.ran);
        let addr = self.base + (self.ran & self.mask) * 8;
        self.pending_store = Some(addr);
        // Shift, test, xor-poly, mask, and the loop branch before the load.
        Next::Access {
            vaddr: VirtAddr(addr),
            op: Op::Load,
            size: 8,
            instr_delta: 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Record;
    use crate::workload::emit::TURN;
    use crate::workload::testutil::{self, max_lead, per_core};

    fn run(threads: u32, references: u64) -> Vec<Record> {
        let cfg: GupsConfig = toml::from_str(&format!(
            "table_bytes = 65536\nreferences = {references}\nthreads = {threads}"
        ))
        .unwrap();
        cfg.validate("workload").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        testutil::drain_owned(build(&cfg, &mut os, pid, 9).unwrap())
    }

    #[test]
    fn a_team_performs_exactly_the_single_thread_updates() {
        let alone = run(1, 20_000);
        let team = run(4, 20_000);
        let updates = |recs: &[Record]| {
            let mut u: Vec<u64> = recs.iter().map(|r| r.vaddr.0).collect();
            u.sort_unstable();
            u
        };
        assert_eq!(updates(&team), updates(&alone));
        for (core, mine) in per_core(&team) {
            assert_eq!(mine.len(), 5000, "core {core}");
            for pair in mine.chunks(2) {
                let (load, store) = (pair[0].1, pair[1].1);
                assert_eq!((load.op, load.instr_delta), (Op::Load, 5));
                assert_eq!((store.op, store.instr_delta), (Op::Store, 1));
                assert_eq!(load.vaddr, store.vaddr);
            }
        }
        // Thread 1 starts where the single thread's 2500th update is.
        assert_eq!(per_core(&team)[&1][0].1.vaddr, alone[5000].vaddr);
        assert!(max_lead(&team, &[]) <= TURN as u64);
        // An odd budget ends on a load.
        assert_eq!(run(3, 20_001).len(), 20_001);
    }

    #[test]
    fn skipping_equals_stepping() {
        let start = 0x1234_5678_9abc_def1;
        let mut ran = start;
        for n in 0..300 {
            assert_eq!(skip(start, n), ran, "{n} steps");
            ran = step(ran);
        }
        let mut ran = start;
        for _ in 0..100_000 {
            ran = step(ran);
        }
        assert_eq!(skip(start, 100_000), ran);
        assert_eq!(
            skip(skip(start, 1 << 40), 12345),
            skip(start, (1 << 40) + 12345)
        );
    }
}
