//! The MMU: L1 TLBs → L2 TLBs → the scheme's miss handling (page walk, fault).

pub mod hashed_walker;
pub mod radix_walker;
pub mod scheme;
pub mod tlb;
pub mod walk;

use crate::addr::{translate, PageSize, Pfn, PhysAddr, VirtAddr, Vpn};
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::mem::{Hierarchy, Level};
use crate::os::Os;
use crate::trace::Op;
use scheme::Scheme;
use serde::Serialize;
use std::collections::BTreeMap;
use tlb::{Tlb, TlbStats};
use walk::{WalkPlan, WalkRefStats};

/// Where a translation was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    L1,
    L2,
    Walk,
    /// The walk found no mapping; the OS handled a page fault first. A fault is a precise
    /// exception: the handler starts once every older instruction has retired, and the
    /// younger ones are fetched again when it returns, at cycle `resume`.
    Fault {
        resume: u64,
    },
}

#[derive(Clone, Copy, Debug)]
pub struct Translation {
    pub paddr: PhysAddr,
    pub size: PageSize,
    /// Cycles from the request to the physical address being known.
    pub latency: u64,
    pub found: Found,
}

/// A level of TLB arrays probed in parallel. The simulator probes them smallest page size
/// first and stops at the hit (an entry lives in one array only), which is what parallel
/// hardware returns, without paying for probes whose result cannot matter.
struct TlbLevel {
    arrays: Vec<(String, Tlb)>,
    latency: u64,
    stats: TlbStats,
}

impl TlbLevel {
    fn new(cfgs: &BTreeMap<String, crate::config::TlbConfig>) -> TlbLevel {
        let mut arrays: Vec<(String, Tlb)> = cfgs
            .iter()
            .filter(|(_, c)| c.entries > 0)
            .map(|(n, c)| (n.clone(), Tlb::new(c)))
            .collect();
        arrays.sort_by_key(|(_, t)| t.smallest_size());
        let latency = arrays.iter().map(|(_, t)| t.latency()).max().unwrap_or(0);
        TlbLevel {
            arrays,
            latency,
            stats: TlbStats::default(),
        }
    }

    #[inline]
    fn lookup(&mut self, va: VirtAddr, asid: u16) -> Option<(Pfn, PageSize)> {
        self.stats.accesses += 1;
        for (_, t) in &mut self.arrays {
            if let Some(hit) = t.lookup(va, asid) {
                self.stats.hits += 1;
                return Some(hit);
            }
        }
        self.stats.misses += 1;
        None
    }
    /// Install a translation in the arrays that hold its size; if none does, splinter it into
    /// the 4 KiB page containing `va` (how a 4K-only TLB caches a piece of a huge page).
    fn fill(&mut self, va: VirtAddr, asid: u16, pfn: Pfn, size: PageSize) {
        if self.arrays.iter().any(|(_, t)| t.holds(size)) {
            for (_, t) in self.arrays.iter_mut().filter(|(_, t)| t.holds(size)) {
                t.insert(va, asid, pfn, size);
            }
        } else {
            let piece = Pfn(pfn.0 + ((va.0 & size.mask()) >> 12));
            for (_, t) in self
                .arrays
                .iter_mut()
                .filter(|(_, t)| t.holds(PageSize::Size4K))
            {
                t.insert(va, asid, piece, PageSize::Size4K);
            }
        }
    }

    fn invalidate_page(&mut self, vpn: Vpn, size: PageSize, asid: u16) {
        for (_, t) in &mut self.arrays {
            t.invalidate_page(vpn, size, asid);
            if size != PageSize::Size4K {
                // Splintered pieces of a huge page: drop the 4 KiB entries inside it.
                for i in 0..size.base_pages() {
                    t.invalidate_page(Vpn(vpn.0 + i), PageSize::Size4K, asid);
                }
            }
        }
    }

    fn snapshot(&self) -> TlbLevelSnapshot {
        TlbLevelSnapshot {
            total: self.stats,
            arrays: self
                .arrays
                .iter()
                .map(|(n, t)| (n.clone(), t.stats))
                .collect(),
        }
    }

    fn reset_stats(&mut self) {
        self.stats = TlbStats::default();
        self.arrays
            .iter_mut()
            .for_each(|(_, t)| t.stats = TlbStats::default());
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MmuCounters {
    pub translations: u64,
    pub l1_misses: u64,
    pub l2_misses: u64,
    pub walks: u64,
    pub walk_cycles: u64,
    /// Cycles walks waited for a free walker.
    pub walker_queue_cycles: u64,
    pub faults: u64,
    pub shootdowns: u64,
}

pub struct Mmu {
    itlb: TlbLevel,
    l1: TlbLevel,
    l2: TlbLevel,
    scheme: Scheme,
    walker_free_at: Vec<u64>,
    entry: Level,
    plan: WalkPlan,
    pub counters: MmuCounters,
    pub walk_refs: WalkRefStats,
}

impl Mmu {
    pub fn new(cfg: &SimConfig) -> Result<Mmu> {
        let mut itlb_cfg = BTreeMap::new();
        itlb_cfg.insert("itlb".to_string(), cfg.mmu.itlb.clone());
        Ok(Mmu {
            itlb: TlbLevel::new(&itlb_cfg),
            l1: TlbLevel::new(&cfg.mmu.l1tlb),
            l2: TlbLevel::new(&cfg.mmu.l2tlb),
            scheme: scheme::build(cfg)?,
            walker_free_at: vec![0; cfg.mmu.walkers as usize],
            entry: Level::from_entry(cfg.mmu.walker_entry),
            plan: WalkPlan::default(),
            counters: MmuCounters::default(),
            walk_refs: WalkRefStats::default(),
        })
    }

    /// Translate `va` of process `pid` for an access of kind `op` issued at cycle `now`;
    /// every older instruction has retired by `older_retired` (when a page fault's handler
    /// can start).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn translate(
        &mut self,
        va: VirtAddr,
        pid: u16,
        op: Op,
        now: u64,
        older_retired: u64,
        os: &mut Os,
        mem: &mut Hierarchy,
    ) -> Result<Translation> {
        self.counters.translations += 1;
        let asid = pid;
        let l1 = if op == Op::Ifetch {
            &mut self.itlb
        } else {
            &mut self.l1
        };
        let mut latency = l1.latency;
        if let Scheme::PerfectTlb = self.scheme {
            return Self::perfect(va, pid, now, latency, older_retired, os, &mut self.counters);
        }
        if let Some((pfn, size)) = l1.lookup(va, asid) {
            return Ok(Translation {
                paddr: translate(va, pfn, size),
                size,
                latency,
                found: Found::L1,
            });
        }
        self.counters.l1_misses += 1;
        latency += self.l2.latency;
        if let Some((pfn, size)) = self.l2.lookup(va, asid) {
            let l1 = if op == Op::Ifetch {
                &mut self.itlb
            } else {
                &mut self.l1
            };
            l1.fill(va, asid, pfn, size);
            return Ok(Translation {
                paddr: translate(va, pfn, size),
                size,
                latency,
                found: Found::L2,
            });
        }
        self.counters.l2_misses += 1;
        let (pfn, size, walk_latency, resume) =
            self.walk(va, pid, now + latency, older_retired, os, mem)?;
        latency += walk_latency;
        self.l2.fill(va, asid, pfn, size);
        let l1 = if op == Op::Ifetch {
            &mut self.itlb
        } else {
            &mut self.l1
        };
        l1.fill(va, asid, pfn, size);
        let found = resume.map_or(Found::Walk, |resume| Found::Fault { resume });
        Ok(Translation {
            paddr: translate(va, pfn, size),
            size,
            latency,
            found,
        })
    }

    fn perfect(
        va: VirtAddr,
        pid: u16,
        now: u64,
        latency: u64,
        older_retired: u64,
        os: &mut Os,
        c: &mut MmuCounters,
    ) -> Result<Translation> {
        match os.truth(pid, va) {
            Some((pfn, size)) => Ok(Translation {
                paddr: translate(va, pfn, size),
                size,
                latency,
                found: Found::L1,
            }),
            None => {
                let (_, _, fault_cycles) = os.fault(pid, va)?;
                c.faults += 1;
                // A perfect TLB caches nothing to shoot down; compaction may have moved even
                // the new page, so take its final frame.
                os.take_shootdowns();
                let (pfn, size) = os.truth(pid, va).expect("the fault just mapped it");
                let resume = (now + latency).max(older_retired) + fault_cycles;
                Ok(Translation {
                    paddr: translate(va, pfn, size),
                    size,
                    latency: resume + latency - now,
                    found: Found::Fault { resume },
                })
            }
        }
    }

    /// Walk on a free walker; on a fault let the OS map the page (once every older
    /// instruction has retired, at `older_retired`) and walk again, as the faulting
    /// instruction re-executes. Returns (frame, size, latency, the cycle the fault handler
    /// returned if there was a fault).
    fn walk(
        &mut self,
        va: VirtAddr,
        pid: u16,
        ready: u64,
        older_retired: u64,
        os: &mut Os,
        mem: &mut Hierarchy,
    ) -> Result<(Pfn, PageSize, u64, Option<u64>)> {
        // The earliest-free walker takes the walk.
        let (slot, &free_at) = self
            .walker_free_at
            .iter()
            .enumerate()
            .min_by_key(|(_, &t)| t)
            .expect("at least one walker (validated)");
        let start = ready.max(free_at);
        self.counters.walker_queue_cycles += start - ready;
        let mut t = start;
        let mut resume = None;
        for attempt in 0..2 {
            let found = Self::plan_walk(&mut self.scheme, va, pid, os, &mut self.plan)?;
            let lat = self.plan.execute(mem, t, self.entry, &mut self.walk_refs);
            self.counters.walks += 1;
            self.counters.walk_cycles += lat;
            t += lat;
            match found {
                Some((pfn, size)) => {
                    self.walker_free_at[slot] = t;
                    return Ok((pfn, size, t - ready, resume));
                }
                None if attempt == 0 => {
                    let (_, _, fault_cycles) = os.fault(pid, va)?;
                    self.counters.faults += 1;
                    for (owner, vpn) in os.take_shootdowns() {
                        self.shootdown(owner, &[(vpn, PageSize::Size4K)]);
                    }
                    t = t.max(older_retired) + fault_cycles;
                    resume = Some(t);
                    // The OS changed the Cuckoo Walk Tables: cached CWT entries may be stale.
                    if let Scheme::Hashed(w) = &mut self.scheme {
                        w.flush();
                    }
                }
                None => break,
            }
        }
        Err(Error::Verify(format!(
            "walk for {va:?} (pid {pid}) found no mapping right after the OS mapped it"
        )))
    }

    /// The walk plan for `va` under the scheme's page table, and the translation it finds.
    fn plan_walk(
        scheme: &mut Scheme,
        va: VirtAddr,
        pid: u16,
        os: &Os,
        plan: &mut WalkPlan,
    ) -> Result<Option<(Pfn, PageSize)>> {
        let pt = os.process(pid)?.pt.as_any();
        let mismatch = || Error::Workload("the scheme's walker and page table disagree".into());
        Ok(match scheme {
            Scheme::Radix(w) => {
                let pt = pt.downcast_ref::<crate::pt::radix::RadixPageTable>();
                w.plan(va, pid, pt.ok_or_else(mismatch)?, &os.store, plan)
            }
            Scheme::Hashed(w) => {
                let pt = pt.downcast_ref::<crate::pt::hashed::HashedPageTable>();
                w.plan(va, pid, pt.ok_or_else(mismatch)?, &os.store, plan)
            }
            Scheme::PerfectTlb => unreachable!("the perfect TLB never walks"),
        })
    }

    /// Drop every cached translation of the given pages (after munmap).
    pub fn shootdown(&mut self, pid: u16, pages: &[(Vpn, PageSize)]) {
        self.counters.shootdowns += 1;
        for &(vpn, size) in pages {
            for level in [&mut self.itlb, &mut self.l1, &mut self.l2] {
                level.invalidate_page(vpn, size, pid);
            }
        }
        // Table pages are never freed, so PWC entries stay valid; flush anyway, as Linux does
        // when it tears down mappings, so no walk can start from stale state.
        match &mut self.scheme {
            Scheme::Radix(w) => w.flush(),
            Scheme::Hashed(w) => w.flush(),
            Scheme::PerfectTlb => {}
        }
    }

    pub fn reset_stats(&mut self) {
        self.itlb.reset_stats();
        self.l1.reset_stats();
        self.l2.reset_stats();
        match &mut self.scheme {
            Scheme::Radix(w) => w.reset_stats(),
            Scheme::Hashed(w) => w.reset_stats(),
            Scheme::PerfectTlb => {}
        }
        self.counters = MmuCounters::default();
        self.walk_refs = WalkRefStats::default();
    }

    pub fn snapshot(&self) -> MmuSnapshot {
        MmuSnapshot {
            itlb: self.itlb.stats,
            l1tlb: self.l1.snapshot(),
            l2tlb: self.l2.snapshot(),
            pwc: match &self.scheme {
                Scheme::Radix(w) => w.pwc_snapshot(),
                _ => BTreeMap::new(),
            },
            cwc: match &self.scheme {
                Scheme::Hashed(w) => Some(w.snapshot()),
                _ => None,
            },
            counters: self.counters.clone(),
        }
    }
}

/// The `mmu` stats subtree.
#[derive(Clone, Debug, Serialize)]
pub struct MmuSnapshot {
    pub itlb: TlbStats,
    pub l1tlb: TlbLevelSnapshot,
    pub l2tlb: TlbLevelSnapshot,
    pub pwc: BTreeMap<&'static str, radix_walker::PwcStats>,
    /// Cuckoo Walk Caches (hashed page tables only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwc: Option<hashed_walker::CwcSnapshot>,
    #[serde(flatten)]
    pub counters: MmuCounters,
}

/// Stats of one TLB level: the level as a whole (`accesses`, `hits`, `misses`) and each array
/// (`<name>.hits` = translations it supplied; it was probed `accesses` times).
#[derive(Clone, Debug, Serialize)]
pub struct TlbLevelSnapshot {
    #[serde(flatten)]
    pub total: TlbStats,
    #[serde(flatten)]
    pub arrays: BTreeMap<String, TlbStats>,
}
