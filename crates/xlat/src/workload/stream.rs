//! STREAM triad: `a[i] = b[i] + q * c[i]` over three arrays of 8-byte doubles, repeated.
//! Sequential: one TLB miss per page per array, the opposite corner from GUPS.

use super::emit::{static_share, MAX_THREADS};
use super::kernel::{KernelSource, KernelThread, Next};
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::AddressSpaces;
use crate::trace::Op;
use serde::{Deserialize, Serialize};
use std::ops::Range;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    /// Bytes per array (three arrays).
    #[serde(default = "default_array")]
    pub array_bytes: u64,
    /// Memory references to emit (three per element).
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

fn default_array() -> u64 {
    1 << 28
}
fn default_refs() -> u64 {
    30_000_000
}

impl StreamConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.array_bytes < 8 || !self.array_bytes.is_multiple_of(8) {
            return Err(Error::config(
                format!("{path}.array_bytes"),
                format!("must be a positive multiple of 8, got {}", self.array_bytes),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)?;
        super::threads_in_range(format!("{path}.threads"), self.threads)
    }
}

/// Map the three arrays and start the triad. With `threads`, each thread runs the triad over
/// its own contiguous chunk of the arrays (OpenMP's static schedule), and the threads meet at a
/// barrier after every pass, as at the end of STREAM's parallel loop.
pub fn build(
    cfg: &StreamConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
) -> Result<KernelSource<Triad>> {
    let mut arrays = [VirtAddr(0); 3];
    for a in &mut arrays {
        *a = super::map_array(os, pid, cfg.array_bytes, cfg.hugetlb_1g, cfg.populate)?;
    }
    let [a, b, c] = arrays;
    let elements = cfg.array_bytes / 8;
    let threads = cfg.threads.clamp(1, MAX_THREADS) as usize;
    let team = (0..threads)
        .map(|t| {
            let chunk = static_share(0..elements, t, threads);
            Triad {
                arrays: [b.0, c.0, a.0],
                i: chunk.start,
                chunk,
                part: 0,
            }
        })
        .collect();
    Ok(KernelSource::new(pid, cfg.references, team))
}

/// One thread's triad over its chunk of the arrays, pass after pass.
pub struct Triad {
    /// b, c and a: the order in which an iteration touches them.
    arrays: [u64; 3],
    chunk: Range<u64>,
    /// The element, and which of its three accesses comes next.
    i: u64,
    part: usize,
}

impl KernelThread for Triad {
    #[inline]
    fn next(&mut self) -> Next {
        // More threads than elements: this one has nothing to do.
        if self.chunk.is_empty() {
            return Next::Done;
        }
        if self.i == self.chunk.end {
            // The end of a pass: the threads meet, then start the next one.
            self.i = self.chunk.start;
            return Next::Barrier;
        }
        let part = self.part;
        let vaddr = VirtAddr(self.arrays[part] + self.i * 8);
        // load b[i]; load c[i]; fma; store a[i] — with the index increment, compare and
        // branch before the first load.
        let (op, instr_delta) = [(Op::Load, 2), (Op::Load, 0), (Op::Store, 1)][part];
        if part == 2 {
            self.part = 0;
            self.i += 1;
        } else {
            self.part += 1;
        }
        Next::Access {
            vaddr,
            op,
            size: 8,
            instr_delta,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Record;
    use crate::workload::emit::TURN;
    use crate::workload::testutil::{self, max_lead, per_core};
    use crate::workload::RecordSource;

    /// 1000 elements per array, `passes` passes over them.
    fn run(threads: u32, passes: u64) -> (Vec<Record>, Vec<u64>) {
        let cfg: StreamConfig = toml::from_str(&format!(
            "array_bytes = 8000\nreferences = {}\nthreads = {threads}",
            3000 * passes
        ))
        .unwrap();
        cfg.validate("workload").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut src = build(&cfg, &mut os, pid).unwrap();
        let recs = testutil::drain(&mut src as &mut dyn RecordSource, 1000);
        (recs, src.barrier_positions().to_vec())
    }

    #[test]
    fn each_thread_streams_its_own_chunk_and_passes_meet_at_barriers() {
        let (alone, _) = run(1, 3);
        let (team, barriers) = run(3, 3);
        let sorted = |recs: &[Record]| {
            let mut v: Vec<_> = recs.iter().map(|r| (r.vaddr.0, r.instr_delta)).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(&team), sorted(&alone));
        let base = alone[0].vaddr.0; // b[0]
        for (core, mine) in per_core(&team) {
            // Elements 0..334, 334..667, 667..1000 of b, c and a, in order, every pass.
            let chunk = static_share(0..1000, core as usize, 3);
            let first = (mine[0].1.vaddr.0 - base) / 8;
            assert_eq!(first, chunk.start, "core {core}");
            assert_eq!(mine.len() as u64, 3 * 3 * (chunk.end - chunk.start));
        }
        // A barrier after each pass (the budget ends the run at the third).
        assert_eq!(barriers, [3000, 6000]);
        assert!(max_lead(&team, &barriers) <= TURN as u64);
        // More threads than elements: the idle ones just end.
        let cfg: StreamConfig =
            toml::from_str("array_bytes = 16\nreferences = 60\nthreads = 5").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let recs = testutil::drain_owned(build(&cfg, &mut os, pid).unwrap());
        assert_eq!(recs.len(), 60);
        assert!(recs.iter().all(|r| r.core < 2));
    }
}
