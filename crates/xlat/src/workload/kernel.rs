//! Loop kernels stepped inline: the simplest workloads (GUPS, STREAM) are a loop whose next
//! access is a few integer operations away, so handing their records over from a producer thread
//! ([`super::emit::ThreadedSource`]) would cost more than computing them. A kernel thread is a
//! small state machine the simulator steps in its own thread; a team of them merges exactly as a
//! team of producer threads does ([`super::turns`]), so a workload's stream is the same either way.

use super::turns::Turns;
use crate::addr::VirtAddr;
use crate::error::Result;
use crate::trace::{Op, Record, RecordSource};

/// What one software thread of a kernel does next.
pub enum Next {
    /// A memory access after `instr_delta` other instructions.
    Access {
        vaddr: VirtAddr,
        op: Op,
        size: u8,
        instr_delta: u32,
    },
    /// Wait until every thread of the team gets here (an OpenMP barrier).
    Barrier,
    /// The thread's loop ended.
    Done,
}

/// One software thread of a loop kernel, as a state machine.
pub trait KernelThread: Send {
    fn next(&mut self) -> Next;
}

/// The merged stream of a team of kernel threads of process `pid`: thread `i`'s records carry
/// core `i`, at most `budget` records in all.
pub struct KernelSource<K> {
    pid: u16,
    threads: Vec<K>,
    turns: Turns,
    emitted: u64,
    total: u64,
}

impl<K: KernelThread> KernelSource<K> {
    pub fn new(pid: u16, budget: u64, threads: Vec<K>) -> KernelSource<K> {
        KernelSource {
            pid,
            turns: Turns::new(threads.len()),
            threads,
            emitted: 0,
            total: budget,
        }
    }

    /// Where in the merged stream each barrier opened (tests of the interleaving).
    #[cfg(test)]
    pub(crate) fn barrier_positions(&self) -> &[u64] {
        &self.turns.barriers
    }
}

impl<K: KernelThread> RecordSource for KernelSource<K> {
    fn fill(&mut self, buf: &mut Vec<Record>) -> Result<()> {
        buf.clear();
        let cap = buf.capacity().max(1);
        while buf.len() < cap && self.emitted < self.total {
            let Some(i) = self.turns.current() else { break };
            let left = usize::try_from(self.total - self.emitted).unwrap_or(usize::MAX);
            let n = (cap - buf.len()).min(self.turns.turn_left()).min(left);
            let (thread, core) = (&mut self.threads[i], i as u8);
            let mut took = 0;
            let mut stopped = None;
            while took < n {
                match thread.next() {
                    Next::Access {
                        vaddr,
                        op,
                        size,
                        instr_delta,
                    } => buf.push(Record {
                        vaddr,
                        op,
                        size,
                        core,
                        pid: self.pid,
                        instr_delta,
                        dep: 0,
                        flags: 0,
                    }),
                    other => {
                        stopped = Some(other);
                        break;
                    }
                }
                took += 1;
            }
            if took > 0 && self.turns.take_opened() {
                let first = buf.len() - took;
                buf[first].flags |= Record::AFTER_BARRIER;
            }
            self.emitted += took as u64;
            self.turns.took(took, self.emitted);
            match stopped {
                None | Some(Next::Access { .. }) => {}
                Some(Next::Barrier) => self.turns.at_barrier(self.emitted),
                Some(Next::Done) => self.turns.finished(self.emitted),
            }
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::emit::ThreadedSource;
    use crate::workload::testutil::drain;

    /// Thread `me` of a test kernel: `phases` phases of `len(me, phase)` accesses each, a
    /// barrier after every phase, so the threads reach barriers at different points of their
    /// turns and some end early.
    #[derive(Clone)]
    struct Phased {
        me: u64,
        phases: u64,
        phase: u64,
        i: u64,
    }

    fn len(me: u64, phase: u64) -> u64 {
        (me * 97 + phase * 131) % 700
    }

    impl KernelThread for Phased {
        fn next(&mut self) -> Next {
            if self.phase == self.phases {
                return Next::Done;
            }
            if self.i == len(self.me, self.phase) {
                self.i = 0;
                self.phase += 1;
                return Next::Barrier;
            }
            self.i += 1;
            Next::Access {
                vaddr: VirtAddr((self.me << 40) + (self.phase << 20) + self.i * 8),
                op: if self.i.is_multiple_of(3) {
                    Op::Store
                } else {
                    Op::Load
                },
                size: 8,
                instr_delta: (self.i % 5) as u32,
            }
        }
    }

    fn kernel_team(threads: u64) -> Vec<Phased> {
        (0..threads)
            .map(|me| Phased {
                me,
                // Thread 2 ends two phases before the others.
                phases: if me == 2 { 4 } else { 6 },
                phase: 0,
                i: 0,
            })
            .collect()
    }

    /// The same kernel threads, each run as an algorithm on a producer thread.
    fn threaded(threads: u64, budget: u64) -> ThreadedSource {
        let team = kernel_team(threads);
        ThreadedSource::team(3, budget, threads as u32, |t| {
            let mut k = team[t].clone();
            move |e| loop {
                match k.next() {
                    Next::Access {
                        vaddr,
                        op,
                        size,
                        instr_delta,
                    } => {
                        e.instr(instr_delta);
                        match op {
                            Op::Store => e.store(vaddr, size)?,
                            _ => e.load(vaddr, size)?,
                        };
                    }
                    Next::Barrier => e.barrier()?,
                    Next::Done => return Ok(()),
                }
            }
        })
    }

    #[test]
    fn a_kernel_team_merges_exactly_as_a_team_of_producer_threads() {
        for threads in [1, 2, 4] {
            for budget in [u64::MAX, 1234] {
                let want = drain(&mut threaded(threads, budget), 1000);
                for cap in [1, 100, 4096] {
                    let mut k = KernelSource::new(3, budget, kernel_team(threads));
                    let got = drain(&mut k, cap);
                    assert_eq!(got, want, "{threads} threads, budget {budget}, cap {cap}");
                }
            }
            let mut t = threaded(threads, u64::MAX);
            drain(&mut t, 1000);
            let mut k = KernelSource::new(3, u64::MAX, kernel_team(threads));
            let recs = drain(&mut k, 1000);
            assert_eq!(k.barrier_positions(), t.barrier_positions());
            // The first record after each barrier (the last ones open after every record) is
            // flagged, and no other.
            let flagged: Vec<u64> = (0..recs.len() as u64)
                .filter(|&i| recs[i as usize].after_barrier())
                .collect();
            let opened: Vec<u64> = k
                .barrier_positions()
                .iter()
                .copied()
                .filter(|&at| at < recs.len() as u64)
                .collect();
            assert_eq!(flagged, opened, "{threads} threads");
            assert_eq!(flagged.is_empty(), threads == 1);
        }
    }
}
