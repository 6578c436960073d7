//! One system of a scheme `S`: its core, MMU, cache hierarchy and DRAM, and its OS, running
//! the reference loop (docs/architecture.md, "one reference"). Everything here is generic over
//! the scheme, so the loop is compiled once per scheme with no virtual calls.

use super::SimConfig;
use crate::core::Core;
use crate::error::{Error, Result};
use crate::mem::{Hierarchy, Level, MemKind};
use crate::mmu::{Mmu, Outcome, PageTables, Translation};
use crate::os::{AddressSpaces, Os};
use crate::pt::store::PtStore;
use crate::schemes::{BuildCtx, Scheme, TableOf};
use crate::stats::{
    CachesSnapshot, CoreSnapshot, EpochSample, Stats, Summary, VerifySnapshot, WalkSnapshot,
};
use crate::trace::{Op, Record, RecordSource};

/// Records pulled from the source per batch.
pub const BATCH: usize = 4096;

pub struct System<S: Scheme> {
    cfg: SimConfig,
    pub os: Os<TableOf<S>>,
    pub mmu: Mmu<S::Mmu>,
    pub mem: Hierarchy,
    pub core: Core,
    source: Box<dyn RecordSource>,
    /// Instructions and cycles at the end of warmup (subtracted from the totals).
    base_instructions: u64,
    base_cycles: u64,
    warm: bool,
    next_epoch: u64,
    epochs: Vec<EpochSample>,
    verified: u64,
}

/// The OS as the MMU reads it.
impl<T: crate::pt::PageTable> PageTables for Os<T> {
    type Table = T;
    #[inline]
    fn table(&self, pid: u16) -> Result<&T> {
        Ok(&self.process(pid)?.pt)
    }
    #[inline]
    fn store(&self) -> &PtStore {
        &self.store
    }
    #[inline]
    fn truth(
        &self,
        pid: u16,
        va: crate::addr::VirtAddr,
    ) -> Option<(crate::addr::Pfn, crate::addr::PageSize)> {
        Os::truth(self, pid, va)
    }
}

/// Boot the OS of `cfg` for scheme `S`: physical memory, and the scheme's page-table
/// organisation and frame policy.
pub fn boot_os<S: Scheme>(cfg: &SimConfig) -> Result<Os<TableOf<S>>> {
    let sections = cfg.schemes.clone();
    let mmu = cfg.mmu.clone();
    let seed = cfg.seed;
    let ctx = BuildCtx {
        sections: &cfg.schemes,
        mmu: &cfg.mmu,
        seed,
    };
    let frames = S::frames(&ctx);
    Os::new(
        &cfg.os,
        seed,
        Box::new(move |pt, pid| {
            let ctx = BuildCtx {
                sections: &sections,
                mmu: &mmu,
                seed,
            };
            S::new_table(&ctx, pt, pid)
        }),
        frames,
    )
}

impl<S: Scheme> System<S> {
    /// Build the system of `cfg` with records from `make_source`, which may create processes
    /// and mappings in the OS first.
    pub fn new(
        cfg: SimConfig,
        make_source: impl FnOnce(&mut dyn AddressSpaces) -> Result<Box<dyn RecordSource>>,
    ) -> Result<System<S>> {
        let mut os = boot_os::<S>(&cfg)?;
        let source = make_source(&mut os)?;
        let warm = cfg.sim.warmup_instructions == 0;
        let ctx = BuildCtx {
            sections: &cfg.schemes,
            mmu: &cfg.mmu,
            seed: cfg.seed,
        };
        let scheme_mmu = S::mmu(&ctx, &mut os.buddy)?;
        Ok(System {
            mmu: Mmu::new(&cfg.mmu, scheme_mmu),
            mem: Hierarchy::new(&cfg.cache, &cfg.dram, cfg.core.frequency_ghz),
            core: Core::new(&cfg.core),
            os,
            source,
            base_instructions: 0,
            base_cycles: 0,
            warm,
            next_epoch: cfg.sim.epoch_instructions,
            epochs: Vec::new(),
            verified: 0,
            cfg,
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Simulate one record.
    #[inline]
    pub fn step(&mut self, rec: &Record) -> Result<()> {
        self.core.non_memory(rec.instr_delta);
        let issue = self.core.issue_memory(rec.dep);
        let t =
            match self
                .mmu
                .translate(rec.vaddr, rec.pid, rec.op, issue, &self.os, &mut self.mem)?
            {
                Outcome::Done(t) => t,
                Outcome::Fault(f) => self.fault(f)?,
            };
        if self.cfg.sim.verify {
            self.verify(rec, t.paddr)?;
        }
        let store = rec.op == Op::Store;
        let data_at = issue + t.latency;
        let (data_latency, _) = self
            .mem
            .access(t.paddr, MemKind::DATA, store, data_at, Level::L1d);
        // Stores retire once translated; the store buffer drains the write in the background.
        let complete = if store {
            data_at + 1
        } else {
            data_at + data_latency
        };
        self.core.complete_memory(complete, store);
        Ok(())
    }

    /// The OS handles the page fault the MMU reported (once every older instruction has
    /// retired: faults are precise), the MMU shoots down what the OS moved, and the
    /// instruction translates again; younger instructions refetch after the handler.
    #[cold]
    fn fault(&mut self, f: crate::mmu::FaultRequest) -> Result<Translation> {
        let (_, _, fault_cycles) = self.os.fault(f.pid, f.va)?;
        for (owner, vpn) in self.os.take_shootdowns() {
            self.mmu
                .shootdown(owner, &[(vpn, crate::addr::PageSize::Size4K)]);
        }
        let older_retired = self.core.older_retired();
        let t = self
            .mmu
            .finish_fault(f, older_retired, fault_cycles, &self.os, &mut self.mem)?;
        if let crate::mmu::Found::Fault { resume } = t.found {
            self.core.refetch_from(resume);
        }
        Ok(t)
    }

    fn verify(&mut self, rec: &Record, got: crate::addr::PhysAddr) -> Result<()> {
        let truth = self.os.truth(rec.pid, rec.vaddr).ok_or_else(|| {
            Error::Verify(format!(
                "{:?} of pid {} translated but the OS has no mapping",
                rec.vaddr, rec.pid
            ))
        })?;
        let want = crate::addr::translate(rec.vaddr, truth.0, truth.1);
        if want != got {
            return Err(Error::Verify(format!(
                "{:?} of pid {}: MMU gave {got:?}, OS maps it to {want:?}",
                rec.vaddr, rec.pid
            )));
        }
        self.verified += 1;
        Ok(())
    }

    fn end_warmup(&mut self) {
        self.warm = true;
        self.base_instructions = self.core.instructions();
        self.base_cycles = self.core.cycles();
        self.core.reset_stats();
        self.mmu.reset_stats();
        self.mem.reset_stats();
        self.os.stats = Default::default();
    }

    fn sample_epoch(&mut self) {
        let c = &self.mmu.counters;
        self.epochs.push(EpochSample {
            instructions: self.core.instructions() - self.base_instructions,
            cycles: self.core.cycles() - self.base_cycles,
            l1tlb_misses: c.l1_misses,
            l2tlb_misses: c.l2_misses,
            walks: c.walks,
            faults: self.os.stats.faults.minor,
            pt_bytes: self.os.pt_bytes(),
            free_frames: self.os.buddy.free_frames(),
            l2_translation_fraction: self.mem.cache(Level::L2).translation_fraction(),
            llc_translation_fraction: self.mem.cache(Level::Llc).translation_fraction(),
        });
    }

    /// Run to the end of the source (or `sim.max_instructions`). `progress(records, total)` is
    /// called every batch; an error it returns (e.g. [`Error::Interrupted`]) stops the run.
    pub fn run(
        &mut self,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<Stats> {
        let total = self.source.len_hint();
        let mut buf = Vec::with_capacity(BATCH);
        let mut done = 0u64;
        let max = self.cfg.sim.max_instructions;
        let warmup = self.cfg.sim.warmup_instructions;
        let epoch = self.cfg.sim.epoch_instructions;
        'outer: loop {
            self.source.fill(&mut buf)?;
            if buf.is_empty() {
                break;
            }
            for rec in &buf {
                self.step(rec)?;
                let instr = self.core.instructions();
                if !self.warm && instr >= warmup {
                    self.end_warmup();
                    if epoch > 0 {
                        self.next_epoch = self.base_instructions + epoch;
                    }
                }
                if epoch > 0 && self.warm && instr >= self.next_epoch {
                    self.sample_epoch();
                    self.next_epoch += epoch;
                }
                if max > 0 && instr >= max {
                    done += 1;
                    break 'outer;
                }
                done += 1;
            }
            progress(done, total)?;
        }
        progress(done, total)?;
        Ok(self.stats())
    }

    /// The stats tree as of now.
    pub fn stats(&self) -> Stats {
        let instructions = self.core.instructions() - self.base_instructions;
        let cycles = self.core.cycles() - self.base_cycles;
        let per_ki = |n: u64| {
            if instructions == 0 {
                0.0
            } else {
                n as f64 * 1000.0 / instructions as f64
            }
        };
        let mmu = self.mmu.snapshot();
        let refs = self.mmu.walk_refs.snapshot();
        let c = &self.mmu.counters;
        let walks = c.walks;
        let dram = self.mem.dram.stats().clone();
        let summary = Summary {
            ipc: if cycles == 0 {
                0.0
            } else {
                instructions as f64 / cycles as f64
            },
            instructions,
            cycles,
            l1tlb_mpki: per_ki(c.l1_misses),
            l2tlb_mpki: per_ki(c.l2_misses),
            walks,
            avg_walk_latency: if walks == 0 {
                0.0
            } else {
                c.walk_cycles as f64 / walks as f64
            },
            walk_refs_l1: self.mmu.walk_refs.by_level[0],
            walk_refs_l2: self.mmu.walk_refs.by_level[1],
            walk_refs_llc: self.mmu.walk_refs.by_level[2],
            walk_refs_dram: self.mmu.walk_refs.by_level[3],
            faults: self.os.stats.faults.minor,
            dram_row_hit_rate: self.mem.dram.row_hit_rate(),
        };
        Stats {
            scheme: self.cfg.scheme.clone(),
            workload: self.cfg.workload.name().to_string(),
            summary,
            core: CoreSnapshot {
                instructions,
                cycles,
                ipc: summary.ipc,
                stats: self.core.stats.clone(),
            },
            mmu,
            walk: WalkSnapshot {
                walks,
                cycles: c.walk_cycles,
                avg_latency: summary.avg_walk_latency,
                refs,
            },
            cache: CachesSnapshot {
                l1d: self.mem.cache(Level::L1d).snapshot(),
                l2: self.mem.cache(Level::L2).snapshot(),
                llc: self.mem.cache(Level::Llc).snapshot(),
            },
            dram,
            os: self.os.snapshot(),
            verify: VerifySnapshot {
                enabled: self.cfg.sim.verify,
                translations_checked: self.verified,
            },
            epochs: self.epochs.clone(),
        }
    }
}
