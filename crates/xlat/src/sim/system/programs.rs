//! A multi-programmed mix on a core per program (docs/architecture.md, "multi-core
//! stepping"): each core reads its own program's stream ([`RecordSource::programs`]) and
//! runs on its own clock; the core whose clock is smallest steps next (ties: the lowest
//! core), so the shared LLC, DRAM, physical memory and OS see the programs' accesses
//! interleaved in time, and no program waits for another's records.
//!
//! Each program runs its quota of records from its own region of interest (the mix's
//! `references` split evenly), warms up for its share of `sim.warmup_instructions` (its core's
//! counters restart then; the shared ones once every program has warmed up), and has its core's
//! statistics taken when it reaches its quota. It then goes on running, its stream started
//! again from the first record whenever it ends, its pages staying mapped, so that the others
//! still share the LLC and DRAM with it. The run ends when every program has reached its quota.

use super::{ipc, System};
use crate::error::{Error, Result};
use crate::mmu::MmuScheme;
use crate::schemes::Scheme;
use crate::sim::RunConfig;
use crate::stats::{MixMemberSnapshot, MixSnapshot, PerCoreSnapshot};
use crate::trace::{Program, Record, RecordSource, BATCH};

/// One program of a mix and where it stands.
pub(super) struct ProgramRun {
    name: String,
    pid: u16,
    /// Its core (its position in the mix).
    pub(super) core: usize,
    pub(super) source: Box<dyn RecordSource>,
    pub(super) buf: Vec<Record>,
    pub(super) pos: usize,
    /// Records read from the source since it (re)started: the stream position after `buf`.
    pub(super) read: u64,
    /// Records stepped in detail.
    stepped: u64,
    quota: u64,
    /// Its core's own warm-up, in instructions; over once `warm`.
    warmup: u64,
    warm: bool,
    restarts: u64,
    /// Its core's statistics when it reached its quota.
    at_quota: Option<PerCoreSnapshot>,
}

impl ProgramRun {
    /// The programs of a source, with their shares of `sim`'s warm-up.
    pub(super) fn all(programs: Vec<Program>, sim: &RunConfig) -> Vec<ProgramRun> {
        let warmup = sim
            .warmup_instructions
            .div_ceil(programs.len().max(1) as u64);
        programs
            .into_iter()
            .map(|p| ProgramRun {
                name: p.name,
                pid: p.pid,
                core: usize::from(p.core),
                source: p.source,
                buf: Vec::with_capacity(BATCH),
                pos: 0,
                read: 0,
                stepped: 0,
                quota: p.quota,
                warmup,
                warm: warmup == 0,
                restarts: 0,
                at_quota: None,
            })
            .collect()
    }

    /// The stream position of the next record.
    pub(super) fn position(&self) -> u64 {
        self.read - (self.buf.len() - self.pos) as u64
    }
}

impl<S: Scheme> System<S> {
    /// Reads program `p`'s next records into its buffer; at the end of its stream, starts it
    /// again if `restart` (an error if it cannot, or has no records at all). Returns whether
    /// it has records.
    pub(super) fn refill(&mut self, p: usize, restart: bool) -> Result<bool> {
        let prog = &mut self.programs[p];
        prog.pos = 0;
        prog.source.fill(&mut prog.buf)?;
        if prog.buf.is_empty() && restart {
            let what = |e: &str| Error::Workload(format!("mix member `{}` {e}", prog.name));
            if !prog.source.restart()? {
                return Err(what("ended and cannot start again"));
            }
            prog.restarts += 1;
            prog.read = 0;
            prog.source.fill(&mut prog.buf)?;
            if prog.buf.is_empty() {
                return Err(what("emits no records"));
            }
        }
        prog.read += prog.buf.len() as u64;
        let any = !prog.buf.is_empty();
        self.drop_moved_translations();
        Ok(any)
    }

    /// Program `p`'s next record, its stream restarting if it has ended.
    #[inline]
    fn next_record(&mut self, p: usize) -> Result<Record> {
        if self.programs[p].pos == self.programs[p].buf.len() {
            self.refill(p, true)?;
        }
        let prog = &mut self.programs[p];
        let rec = prog.buf[prog.pos];
        prog.pos += 1;
        Ok(rec)
    }

    /// Every program on its own core until each has reached its quota (or the run reaches
    /// `sim.max_instructions`).
    pub(super) fn run_programs(
        &mut self,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<()> {
        let skipped = self.skipped.records;
        let total = Some(skipped + self.programs.iter().map(|p| p.quota).sum::<u64>());
        // Progress: the records each program has run towards its quota.
        let towards = |programs: &[ProgramRun]| {
            skipped + programs.iter().map(|p| p.stepped.min(p.quota)).sum::<u64>()
        };
        let mut left = self.programs.len();
        let mut done = skipped;
        while left > 0 {
            let p = (0..self.programs.len())
                .min_by_key(|&p| self.cores[self.programs[p].core].core.now())
                .expect("a mix has a program");
            let rec = self.next_record(p)?;
            let c = self.programs[p].core;
            self.cores[c].runs(rec.pid);
            self.step_on(c, &rec).map_err(|e| e.at_record(done))?;
            done += 1;
            let prog = &mut self.programs[p];
            prog.stepped += 1;
            if !prog.warm && self.cores[c].instructions() >= prog.warmup {
                self.end_program_warmup(p);
            }
            if self.programs[p].stepped == self.programs[p].quota {
                self.programs[p].at_quota = Some(self.core_snapshot(c));
                left -= 1;
            }
            if self.after_step() {
                break;
            }
            if done.is_multiple_of(BATCH as u64) {
                progress(towards(&self.programs), total)?;
            }
        }
        progress(towards(&self.programs), total)
    }

    /// Program `p` has warmed up: its core's counters start from here. Once every program
    /// has, so do those of what they share.
    fn end_program_warmup(&mut self, p: usize) {
        self.programs[p].warm = true;
        let c = self.programs[p].core;
        let unit = &mut self.cores[c];
        unit.base_instructions = unit.core.instructions();
        unit.base_cycles = unit.core.cycles();
        unit.core.reset_stats();
        unit.mmu.reset_stats();
        self.mem.reset_private_stats(c);
        if self.programs.iter().all(|p| p.warm) {
            self.warm = true;
            S::Mmu::reset_shared_stats(&mut self.shared);
            self.mem.reset_shared_stats();
            self.os.reset_stats();
            self.ipi = Default::default();
            self.barriers = Default::default();
            let epoch = self.cfg.sim.epoch_instructions;
            if epoch > 0 {
                self.next_epoch = self.instructions + epoch;
            }
            self.next_event = self.next_event();
        }
    }

    /// The `mix` subtree: each program at its quota (or as of now, if it has not reached it).
    pub(super) fn mix_snapshot(&self) -> Option<MixSnapshot> {
        if self.programs.is_empty() {
            return None;
        }
        let members = self
            .programs
            .iter()
            .map(|p| {
                let at = p
                    .at_quota
                    .clone()
                    .unwrap_or_else(|| self.core_snapshot(p.core));
                MixMemberSnapshot {
                    workload: p.name.clone(),
                    pid: p.pid,
                    core_index: p.core as u32,
                    quota: p.quota,
                    reached_quota: p.at_quota.is_some(),
                    restarts: p.restarts,
                    instructions: at.core.instructions,
                    cycles: at.core.cycles,
                    ipc: ipc(at.core.instructions, at.core.cycles),
                    at_quota: at,
                }
            })
            .collect();
        Some(MixSnapshot { members })
    }
}
