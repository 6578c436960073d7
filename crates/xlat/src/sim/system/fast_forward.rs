//! Fast-forward: the records before the measurement (a program's set-up, or a trace's first
//! instructions) run functionally, in two parts.
//!
//! - **Skipping.** Each record only has its page mapped if the program touches it first: the
//!   OS faults and allocates, page tables grow as in a detailed run. Nothing is looked up or
//!   timed, so this goes at the speed of the OS model.
//! - **Warming.** The last `sim.fast_forward_warm_records` skipped records are then replayed,
//!   in order, through the MMUs (TLBs, page-walk caches, the scheme's own structures) and, with
//!   `sim.fast_forward_caches`, the caches, with the hierarchy taking no time
//!   ([`Timing::WarmCaches`]). Replaying is possible because the page tables are final by then;
//!   a record whose page was unmapped after it ran is passed over. Structures hold far fewer
//!   entries than a window of a million records touches, so they end as a detailed warm-up over
//!   the same records would leave them — exactly, when the window covers the whole
//!   fast-forward and the set-up took no faults (tested).
//!
//! The replay runs on a clock of its own that advances by each translation's latency, so what
//! a translation fills with a ready time (walkers, the range TLB) is ready for the records after
//! it, and the detailed run starts at that clock.

use super::System;
use crate::error::Result;
use crate::mem::Timing;
use crate::mmu::{Found, MmuScheme, Outcome};
use crate::schemes::Scheme;
use crate::sim::FastForward;
use crate::trace::{Op, Record, Roi};
use std::collections::VecDeque;

impl<S: Scheme> System<S> {
    /// Run functionally as far as `sim.fast_forward` says: to the source's region of interest,
    /// or a number of instructions. Returns the records of the last batch read, which the
    /// detailed simulation starts with.
    pub(super) fn fast_forward(
        &mut self,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<Vec<Record>> {
        let mut buf = Vec::with_capacity(crate::trace::BATCH);
        let budget = match self.cfg.sim.fast_forward {
            FastForward::Instructions(0) => return Ok(buf),
            FastForward::Instructions(n) => Some(n),
            FastForward::Roi if self.source.roi() == Roi::At(0) => return Ok(buf),
            FastForward::Roi => None,
        };
        self.fast_forwarding = true;
        let window = usize::try_from(self.cfg.sim.fast_forward_warm_records).unwrap_or(usize::MAX);
        let mut recent = VecDeque::with_capacity(window.min(1 << 20));
        let total = self.source.len_hint();
        loop {
            self.fill(&mut buf)?;
            if buf.is_empty() {
                break;
            }
            // Reading may have unmapped pages (a workload's munmap): nothing is known mapped.
            let mut mapped = None;
            let mut stop = buf.len();
            if budget.is_none() {
                if let Roi::At(at) = self.source.roi() {
                    stop = at.saturating_sub(self.skipped.records).min(stop as u64) as usize;
                }
            }
            for (i, rec) in buf[..stop].iter().enumerate() {
                if budget.is_some_and(|n| self.skipped.instructions >= n) {
                    stop = i;
                    break;
                }
                self.skip(rec, &mut mapped)
                    .map_err(|e| e.at_record(self.skipped.records))?;
                if window > 0 {
                    if recent.len() == window {
                        recent.pop_front();
                    }
                    recent.push_back(*rec);
                }
            }
            progress(self.skipped.records, total)?;
            if stop < buf.len() {
                buf.drain(..stop);
                self.skipped.reached_roi = budget.is_none();
                break;
            }
        }
        self.warm_up(recent)?;
        self.fast_forwarding = false;
        // The detailed run goes on from the cycle the warming reached.
        for unit in &mut self.cores {
            unit.core.refetch_from(self.ff_clock);
        }
        self.reset_measurement();
        Ok(buf)
    }

    /// [`System::fast_forward`] for the programs of a mix, each on its own core: each program
    /// skips to its own region of interest (or its share of the instructions), one after
    /// the other, and the last records of each (its share of the window) are replayed
    /// interleaved, one of each program in turn. Each program's next record stays in its
    /// buffer for the detailed run.
    pub(super) fn fast_forward_programs(
        &mut self,
        progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
    ) -> Result<()> {
        let n = self.programs.len() as u64;
        let budget = match self.cfg.sim.fast_forward {
            FastForward::Instructions(0) => return Ok(()),
            FastForward::Instructions(i) => Some(i.div_ceil(n)),
            FastForward::Roi if self.programs.iter().all(|p| p.source.roi() == Roi::At(0)) => {
                return Ok(())
            }
            FastForward::Roi => None,
        };
        self.fast_forwarding = true;
        let window = self.cfg.sim.fast_forward_warm_records.div_ceil(n);
        let window = usize::try_from(window).unwrap_or(usize::MAX);
        let mut recents = Vec::with_capacity(self.programs.len());
        let mut all_reached = true;
        for p in 0..self.programs.len() {
            let mut recent = VecDeque::with_capacity(window.min(1 << 20));
            let mut instructions = 0;
            let mut mapped = None;
            loop {
                let prog = &self.programs[p];
                if prog.pos == prog.buf.len() {
                    // A program that ends in its set-up starts again in the detailed run.
                    if !self.refill(p, false)? {
                        all_reached = false;
                        break;
                    }
                    // Reading may have unmapped pages: nothing is known mapped.
                    mapped = None;
                    progress(self.skipped.records, None)?;
                    continue;
                }
                let stop = match budget {
                    Some(b) => instructions >= b,
                    None => matches!(prog.source.roi(), Roi::At(at) if prog.position() >= at),
                };
                if stop {
                    break;
                }
                let rec = prog.buf[prog.pos];
                self.programs[p].pos += 1;
                self.skip(&rec, &mut mapped)
                    .map_err(|e| e.at_record(self.skipped.records))?;
                instructions += u64::from(rec.instr_delta) + u64::from(!rec.joins_previous());
                if window > 0 {
                    if recent.len() == window {
                        recent.pop_front();
                    }
                    recent.push_back(rec);
                }
            }
            recents.push(recent);
        }
        self.skipped.reached_roi = budget.is_none() && all_reached;
        let longest = recents.iter().map(VecDeque::len).max().unwrap_or(0);
        let interleaved = (0..longest)
            .flat_map(|k| recents.iter().filter_map(move |r| r.get(k).copied()))
            .collect();
        self.warm_up(interleaved)?;
        self.fast_forwarding = false;
        for unit in &mut self.cores {
            unit.core.refetch_from(self.ff_clock);
        }
        self.reset_measurement();
        Ok(())
    }

    /// Skip one record: the OS maps its page if this is the first touch, nothing else.
    ///
    /// `mapped` is the 4 KiB page (with its process) of the record skipped before, which is
    /// mapped: a record on it needs no lookup (most records of a sequential set-up). Only a
    /// fault changes mappings while a batch is skipped, and a fault maps the page it is for.
    fn skip(&mut self, rec: &Record, mapped: &mut Option<(u16, u64)>) -> Result<()> {
        let c = rec.core as usize % self.cores.len();
        self.cores[c].runs(rec.pid);
        let page = (rec.pid, rec.vaddr.0 >> crate::addr::BASE_PAGE_SHIFT);
        if *mapped != Some(page) {
            if self.os.truth(rec.pid, rec.vaddr).is_none() {
                self.os.fault(rec.pid, rec.vaddr)?;
                // Functional: shootdowns cost nothing and copies take no time.
                self.settle_moves(c, self.ff_clock);
            }
            // Swapping by access time: a skipped record's page is referenced too (the
            // records after it on the same page change no page's order).
            self.os.touch_va(rec.pid, rec.vaddr);
            *mapped = Some(page);
        }
        self.skipped.records += 1;
        self.skipped.instructions += u64::from(rec.instr_delta) + u64::from(!rec.joins_previous());
        Ok(())
    }

    /// Replay `recent` through the MMUs (and the caches) at no cost.
    fn warm_up(&mut self, recent: VecDeque<Record>) -> Result<()> {
        // A translation-only run has no cache to warm.
        self.mem.set_timing(
            if self.cfg.sim.fast_forward_caches && !self.translation_only {
                Timing::WarmCaches
            } else {
                Timing::Untouched
            },
        );
        for rec in &recent {
            let c = rec.core as usize % self.cores.len();
            self.translate_functionally(c, rec, false)?;
        }
        self.skipped.warmed_records = recent.len() as u64;
        self.mem.set_timing(self.run_timing());
        Ok(())
    }

    /// One record of a translation-only run (`sim.timing = "translation"`) on core `c`:
    /// translated as the warming translates, its page fault (if any) handled as in a
    /// detailed run, and its instructions counted as the core model counts them.
    #[inline]
    pub(super) fn step_untimed(&mut self, c: usize, rec: &Record) -> Result<()> {
        self.translate_functionally(c, rec, true)?;
        let core = &mut self.cores[c].core;
        let before = core.instructions();
        core.count_untimed(
            rec.instr_delta,
            rec.core,
            rec.op == Op::Store,
            rec.joins_previous(),
        );
        self.instructions += core.instructions() - before;
        Ok(())
    }

    /// One record through core `c`'s MMU and the caches (as the hierarchy's timing says:
    /// warming, or untouched), at the functional clock. A record whose page is not mapped
    /// takes its page fault if `faults` (a translation-only run); otherwise (warming, where
    /// the page was unmapped after it ran) it is passed over.
    #[inline]
    fn translate_functionally(&mut self, c: usize, rec: &Record, faults: bool) -> Result<()> {
        self.mem.set_core(c);
        let now = self.ff_clock;
        if self.verified >= self.inject_at {
            self.inject(rec);
        }
        if self.virtual_hit(c, rec).is_some() {
            self.ff_clock = now + 1;
            return Ok(());
        }
        self.lend_walkers(c);
        let outcome = self.cores[c].mmu.translate(
            rec.vaddr,
            rec.pid,
            rec.op,
            now,
            &self.os,
            &mut self.mem,
            &mut self.shared,
        )?;
        let (t, faulted) = match outcome {
            Outcome::Done(t) => (t, false),
            Outcome::Fault(f) if faults => (self.fault(c, f)?, true),
            Outcome::Fault(_) => {
                self.lend_walkers(c);
                return Ok(());
            }
        };
        self.lend_walkers(c);
        if self.cfg.sim.verify {
            self.verify(rec, t.paddr)?;
        }
        self.profile_reference(rec, faulted);
        if <S::Mmu as MmuScheme>::NOTES_SIDE_HITS && t.found == Found::Side {
            self.os.side_hit(super::page_frame(&t));
        }
        self.os.touch(super::page_frame(&t));
        if <S::Mmu as MmuScheme>::NOTES_WALKS && !self.cores[c].mmu.walk_notes.is_empty() {
            self.deliver_walk_notes(c, now)?;
        }
        self.data_access(&t, rec.op == Op::Store, 0);
        self.ff_clock = now + t.latency + 1;
        Ok(())
    }
}
