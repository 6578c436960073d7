//! The x86-64 page walker with split page-walk caches (PWCs).
//!
//! Each PWC caches non-leaf entries of one level, keyed by the virtual-address bits that select
//! them: the PD-entry cache (VA[47:21]) yields the PT page, the PDPT-entry cache (VA[47:30]) the PD
//! page, the PML4-entry cache (VA[47:39]) the PDPT page; with a 5-level table an optional
//! PML5-entry cache (VA[56:48]) yields the PML4 page. All are probed in parallel; the walk
//! resumes below the deepest hit. A cold 4 KiB walk reads 4 entries (5 with 5 levels), 2 MiB 3,
//! 1 GiB 2; a PD-cache hit leaves one.

use crate::addr::{PageSize, Pfn, PhysAddr, VirtAddr};
use crate::assoc::{SetAssoc, Vacancy};
use crate::mem::MemKind;
use crate::mmu::config::TlbConfig;
use crate::mmu::walk::WalkPlan;
use crate::pt::radix::{entry_addr, entry_frame, index, leaf_size, RadixPageTable, PRESENT};
use crate::pt::store::{PtStore, TableRef};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// PWC levels: entries of levels 2 (PD), 3 (PDPT), 4 (PML4), 5 (PML5).
const PWC_LEVELS: [u32; 4] = [2, 3, 4, 5];
/// Their names, as in `schemes.radix.pwc_levels` and the `mmu.pwc` stats.
pub const PWC_NAMES: [&str; 4] = ["pd", "pdpt", "pml4", "pml5"];

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PwcStats {
    pub hits: u64,
    pub misses: u64,
}

pub struct RadixWalker {
    /// Indexed by `level - 2`; `None` when the PWC is configured away (`entries = 0`). An
    /// entry holds the next table's frame and where the store keeps its contents, so the walk
    /// below a hit reads its entry without looking the frame up (a host cost, not a simulated
    /// one: the hardware PWC holds the frame number alone).
    pwc: [Option<SetAssoc<TableRef>>; 4],
    /// The slowest PWC's latency (they are probed in parallel).
    pwc_latency: u64,
    pub pwc_stats: [PwcStats; 4],
    /// Under ChampSim's placement: the virtual address of the last walk that passed each
    /// PWC entry's tag at its level (read that entry, or hit it), by `(level, tag)`. A
    /// ChampSim PSCL entry keeps the address of the walk that filled it, and every walk
    /// through it fills it again; its walker's first read after a hit goes to that walk's
    /// frame ([`RadixPageTable::champsim_pscl_read`]).
    pscl_filled_by: FxHashMap<(u32, u64), VirtAddr>,
}

/// VA bits that select the entry of `level`: everything above the range that entry maps.
#[inline]
fn prefix(va: VirtAddr, level: u32) -> u64 {
    va.0 >> (12 + 9 * (level - 1))
}

#[inline]
fn pwc_tag(prefix: u64, asid: u16) -> u64 {
    (prefix << 16) | asid as u64
}

impl RadixWalker {
    /// Host bytes of one PWC entry (config host-memory checks).
    pub const PWC_SLOT_BYTES: u64 = SetAssoc::<TableRef>::SLOT_BYTES;

    /// The walker with the PWCs `geometry` gives each level (`pd`, `pdpt`, `pml4`, `pml5`),
    /// absent where it gives none.
    pub fn new(geometry: [Option<&TlbConfig>; 4]) -> RadixWalker {
        let make = |cfg: Option<&TlbConfig>| {
            cfg.filter(|c| c.entries > 0)
                .map(|c| SetAssoc::new(c.sets() as usize, c.ways as usize, c.replacement))
        };
        RadixWalker {
            pwc: geometry.map(make),
            pwc_latency: geometry
                .iter()
                .flatten()
                .filter(|c| c.entries > 0)
                .map(|c| c.latency as u64)
                .max()
                .unwrap_or(0),
            pwc_stats: [PwcStats::default(); 4],
            pscl_filled_by: FxHashMap::default(),
        }
    }

    /// Walk `pt` for `va` functionally, recording the references in `plan`. Returns the mapping,
    /// or `None` if an entry on the way is not present (a page fault).
    #[inline]
    pub fn plan(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pt: &RadixPageTable,
        store: &PtStore,
        plan: &mut WalkPlan,
    ) -> Option<(Pfn, PageSize)> {
        plan.clear();
        self.walk_into(va, asid, pt, store, plan, MemKind::pt_level, |at, _| {
            Some(at)
        })
    }

    /// Walk `pt` for `va` functionally, appending its references to `plan` after those already
    /// there. Each entry is read from `store` at its table address `at` and referenced at
    /// `locate(at, plan)`: `at` itself for a native table; for a guest's table (whose pages
    /// are at guest-physical addresses) the entry's host-physical address, whose translation
    /// appends the host dimension's references first (the 2D walk, Gandhi et al. Fig 2).
    /// `locate` returning `None` ends the walk without a mapping. `kind` tags the references
    /// by level.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn walk_into(
        &mut self,
        va: VirtAddr,
        asid: u16,
        pt: &RadixPageTable,
        store: &PtStore,
        plan: &mut WalkPlan,
        kind: fn(u32) -> MemKind,
        mut locate: impl FnMut(PhysAddr, &mut WalkPlan) -> Option<PhysAddr>,
    ) -> Option<(Pfn, PageSize)> {
        plan.fixed_cycles += self.pwc_latency;
        let (mut level, mut table) = (pt.levels(), store.table(pt.root()));
        // Where each PWC that missed takes its entry if the walk reads it: the probe's pass
        // chose the slot, and nothing touches that PWC before the fill below.
        let mut vacancies: [Option<Vacancy>; 4] = [None; 4];
        // Deepest PWC hit first.
        for (i, &l) in PWC_LEVELS.iter().enumerate() {
            if l > pt.levels() {
                continue;
            }
            let Some(pwc) = self.pwc[i].as_mut() else {
                continue;
            };
            let p = prefix(va, l);
            let set = pwc.set_of(p);
            match pwc.probe(set, pwc_tag(p, asid)) {
                Ok(&mut next) => {
                    self.pwc_stats[i].hits += 1;
                    level = l - 1;
                    table = next;
                    if pt.is_champsim() {
                        self.champsim_pscl_hit(va, asid, l, pt, plan, kind);
                    }
                    break;
                }
                Err(vacancy) => vacancies[i] = Some(vacancy),
            }
            self.pwc_stats[i].misses += 1;
        }
        loop {
            let at = entry_addr(table.pfn, va, level);
            let word = index(va, level) as usize;
            let e = store.read_in(table, word);
            if e & PRESENT == 0 && pt.is_champsim() {
                // ChampSim's walker reads no entry that is not there: it makes it and reads
                // it where it made it ([`crate::mmu::Mmu::finish_fault_in_walk`]).
                return None;
            }
            let referenced = locate(pt.referenced(at, va, level), plan)?;
            plan.push_next(referenced, kind(level));
            if e & PRESENT == 0 {
                return None;
            }
            if let Some(size) = leaf_size(e, level) {
                return Some((entry_frame(e), size));
            }
            table = store.child(table, word, entry_frame(e));
            if pt.is_champsim() {
                self.pscl_filled_by
                    .insert((level, pwc_tag(prefix(va, level), asid)), va);
            }
            let i = (level as usize).wrapping_sub(2);
            if let (Some(Some(pwc)), Some(Some(vacancy))) = (self.pwc.get_mut(i), vacancies.get(i))
            {
                // Every level below the deepest PWC hit was looked up and missed above.
                pwc.fill(*vacancy, pwc_tag(prefix(va, level), asid), table);
            }
            level -= 1;
        }
    }

    /// ChampSim's walker after a hit in the PSCL of `level` (`src/ptw.cc`, `handle_read`):
    /// before the entry of the level below, it reads that level at the frame of the walk
    /// that filled the PSCL entry and at `va`'s index, a line of another page; then the hit
    /// fills the entry again with `va`.
    fn champsim_pscl_hit(
        &mut self,
        va: VirtAddr,
        asid: u16,
        level: u32,
        pt: &RadixPageTable,
        plan: &mut WalkPlan,
        kind: fn(u32) -> MemKind,
    ) {
        let key = (level, pwc_tag(prefix(va, level), asid));
        if let Some(filled_by) = self.pscl_filled_by.insert(key, va) {
            if let Some(at) = pt.champsim_pscl_read(filled_by, va, level - 1) {
                plan.push_next(at, kind(level - 1));
            }
        }
    }

    pub fn flush(&mut self) {
        self.pwc.iter_mut().flatten().for_each(SetAssoc::clear);
    }

    pub fn reset_stats(&mut self) {
        self.pwc_stats = Default::default();
    }

    /// Hits and misses of each PWC: always `pd`, `pdpt`, `pml4`, and `pml5` when there is one.
    pub fn pwc_snapshot(&self) -> std::collections::BTreeMap<&'static str, PwcStats> {
        PWC_NAMES
            .iter()
            .copied()
            .zip(self.pwc_stats)
            .enumerate()
            .filter(|&(i, _)| i < 3 || self.pwc[i].is_some())
            .map(|(_, named)| named)
            .collect()
    }
}
