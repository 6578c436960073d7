//! The per-process hashed page table: one elastic cuckoo table per page size (created on the
//! first mapping of that size, so an unused size holds no memory and no L2P entries), the
//! process's L2P table, and the CWT contents. Implements the engine's [`PageTable`].

use super::config::{HashedConfig, HptKind};
use super::cost::CostModel;
use super::cwt::Cwt;
use super::elastic::{ElasticTable, Params, Policy, ProbeLine};
use super::l2p::L2pTable;
use super::stats::{HptStats, SizeStats, TotalStats};
use super::way::{Env, ProcAcct};
use crate::addr::{PageSize, Pfn, PhysAddr, Vpn};
use crate::error::{Error, Result};
use crate::pt::store::PtStore;
use crate::pt::{PageTable, PtContext};
use crate::rng::Rng;

/// Random-number stream of the hashed page tables (way choice); one sub-stream per size.
pub const RNG_STREAM: u64 = 0x4850_5400;

pub struct HashedPageTable {
    kind: HptKind,
    cfg: HashedConfig,
    cost: CostModel,
    seed: u64,
    tables: [Option<ElasticTable>; 3],
    l2p: L2pTable,
    cwt: Cwt,
    acct: ProcAcct,
}

/// The parameters of one elastic table of a `kind` hashed page table configured by `cfg`.
pub(super) fn params_of(cfg: &HashedConfig, kind: HptKind, hash_seed: u64) -> Params {
    let policy = match kind {
        HptKind::Ecpt => Policy::ECPT,
        HptKind::Mehpt => Policy {
            chunk_sizes: Some(cfg.mehpt.chunk_sizes.clone()),
            in_place: cfg.mehpt.in_place,
            per_way: cfg.mehpt.per_way,
        },
    };
    Params {
        ways: cfg.ways,
        initial_lines: cfg.initial_lines,
        upsize: cfg.upsize,
        downsize: cfg.downsize,
        resize_bits: cfg.resize_bits(),
        hash: cfg.hash,
        hash_seed,
        max_reinsertions: cfg.max_reinsertions,
        rehash_per_insert: cfg.rehash_per_insert,
        rehash_cycles_per_entry: cfg.rehash_cycles_per_entry,
        policy,
        name: match kind {
            HptKind::Ecpt => "ECPT",
            HptKind::Mehpt => "ME-HPT",
        },
    }
}

impl HashedPageTable {
    /// An empty table of `kind` under a validated `cfg`; `seed` drives way choice and hashes.
    pub fn new(cfg: &HashedConfig, kind: HptKind, seed: u64) -> Result<HashedPageTable> {
        cfg.validate("hashed")?;
        if kind == HptKind::Mehpt && cfg.scale != 2 {
            return Err(Error::config(
                "schemes.hashed.table.scale",
                "ME-HPT resizes by doubling (in-place and per-way resizing, §IV-C/D): use 2",
            ));
        }
        Ok(HashedPageTable {
            kind,
            cost: CostModel::new(&cfg.alloc_cost),
            seed,
            tables: [None, None, None],
            l2p: L2pTable::new(cfg.ways, cfg.mehpt.l2p_entries, cfg.mehpt.stealing),
            cwt: Cwt::new(cfg.ways, cfg.cwt_section_lines),
            acct: ProcAcct::default(),
            cfg: cfg.clone(),
        })
    }

    pub fn kind(&self) -> HptKind {
        self.kind
    }

    fn params(&self) -> Params {
        params_of(
            &self.cfg,
            self.kind,
            Rng::new(self.seed, RNG_STREAM).next_u64(),
        )
    }

    /// The table of `size`, if a page of that size was ever mapped.
    pub fn table(&self, size: PageSize) -> Option<&ElasticTable> {
        self.tables[size.index()].as_ref()
    }

    pub fn l2p(&self) -> &L2pTable {
        &self.l2p
    }

    pub fn cwt(&self) -> &Cwt {
        &self.cwt
    }

    /// Functional translation from the stored lines: the frame and size mapping `vpn`.
    pub fn translate(&self, store: &PtStore, vpn: Vpn) -> Option<(Pfn, PageSize)> {
        PageSize::ALL.into_iter().find_map(|size| {
            let t = self.table(size)?;
            t.lookup(store, &self.l2p, vpn.align_down(size))
                .map(|pfn| (pfn, size))
        })
    }

    /// The lines a hardware walk of the `size` table probes in parallel for `vpn`, one per
    /// way, old or new table per way by the rehashing pointers, with whether each hit after
    /// reading memory. Returns how many were written (0 if no `size` table exists).
    pub fn probe_lines(
        &self,
        store: &PtStore,
        size: PageSize,
        vpn: Vpn,
        out: &mut [ProbeLine],
    ) -> usize {
        self.table(size)
            .map_or(0, |t| t.probe(store, &self.l2p, vpn.align_down(size), out))
    }

    /// Address of logical line `index` of `way` of the `size` table's current generation:
    /// for ME-HPT the MMU's shift, L2P read and mask (§IV-A); for ECPT base + offset.
    pub fn l2p_lookup(&self, way: usize, size: PageSize, index: u64) -> Option<PhysAddr> {
        self.table(size)?.line_addr(&self.l2p, way, index)
    }

    /// Cycles spent allocating and zeroing table memory since the last call (§III cost of
    /// contiguity), for the OS to charge to the operation that caused them.
    pub fn take_alloc_cycles(&mut self) -> u64 {
        std::mem::take(&mut self.acct.pending_cycles)
    }

    /// Cycles the OS spent moving entries (rehashes of resizing ways, cuckoo re-insertions)
    /// since the last call, for the OS to charge to the operation that caused them.
    pub fn take_rehash_cycles(&mut self) -> u64 {
        std::mem::take(&mut self.acct.pending_rehash_cycles)
    }

    pub fn stats(&self) -> HptStats {
        let snap = |s: PageSize| {
            self.table(s)
                .map_or_else(SizeStats::default, |t| t.snapshot())
        };
        let sizes = [
            snap(PageSize::Size4K),
            snap(PageSize::Size2M),
            snap(PageSize::Size1G),
        ];
        let sum = |f: &dyn Fn(&SizeStats) -> u64| sizes.iter().map(f).sum::<u64>();
        let total = TotalStats {
            current_bytes: self.acct.bytes,
            cwt_bytes: self.cwt.bytes(),
            peak_bytes: self.acct.peak_bytes,
            max_contiguous_bytes: sizes
                .iter()
                .map(|s| s.max_contiguous_bytes)
                .max()
                .unwrap_or(0),
            l2p_entries_peak: self.l2p.peak_used() as u64,
            alloc_cycles: sum(&|s| s.alloc_cycles),
            rehash_entries_moved: sum(&|s| s.rehash_entries_moved),
            cuckoo_reinsertions: sum(&|s| s.cuckoo_reinsertions),
            rehash_cycles: sum(&|s| s.rehash_cycles),
            failed_allocs: sum(&|s| s.failed_allocs),
            upsizes: sum(&|s| s.upsizes.iter().sum()),
            downsizes: sum(&|s| s.downsizes.iter().sum()),
            chunk_transitions: sum(&|s| s.chunk_transitions),
        };
        let [size_4k, size_2m, size_1g] = sizes;
        HptStats {
            size_4k,
            size_2m,
            size_1g,
            total,
        }
    }

    /// Scan memory and check every table's invariants (see [`ElasticTable::audit`]) and the
    /// byte accounting; returns the live lines.
    pub fn audit(&self, store: &PtStore) -> std::result::Result<u64, String> {
        let mut lines = 0;
        let mut bytes = 0;
        for t in self.tables.iter().flatten() {
            let live = t.audit(store, &self.l2p)?;
            self.cwt.audit(store, t.size(), &live)?;
            lines += live.len() as u64;
            bytes += t.bytes();
        }
        if bytes != self.acct.bytes {
            return Err(format!(
                "tables hold {bytes} bytes, accounting says {}",
                self.acct.bytes
            ));
        }
        Ok(lines)
    }
}

impl HashedPageTable {
    /// One attempt at mapping; the caller retries after making L2P room.
    fn try_map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        let params = self.params();
        let rng = Rng::new(self.seed, RNG_STREAM + 1 + size.index() as u64);
        let mut env = Env {
            ctx,
            l2p: &mut self.l2p,
            cost: &self.cost,
            acct: &mut self.acct,
        };
        let slot = &mut self.tables[size.index()];
        if slot.is_none() {
            *slot = Some(ElasticTable::new(&mut env, params, size, rng)?);
        }
        let table = slot.as_mut().expect("just created");
        if table.map(&mut env, vpn, pfn)? {
            self.cwt.add(env.ctx, vpn, size)?;
        }
        Ok(())
    }

    /// Map `vpn` (aligned to `size`), making L2P room as needed.
    fn map_lines(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        // A table about to be created needs an L2P entry in every way.
        for w in self.l2p_shortage(size) {
            self.make_l2p_room(ctx, w, size)?;
        }
        loop {
            let Err(e) = self.try_map(ctx, vpn, pfn, size) else {
                return Ok(());
            };
            // Out of L2P entries: retry after another size gave some back (each retry moves
            // some subtable to a strictly larger chunk size, so this ends).
            let short = self.l2p_shortage(size);
            if short.is_empty() {
                return Err(e);
            }
            for w in short {
                if !self.make_l2p_room(ctx, w, size)? {
                    return Err(e);
                }
            }
        }
    }

    /// Write the ways that lines entered or left since the last call into the CWT.
    fn sync_cwt(&mut self, ctx: &mut PtContext) -> Result<()> {
        for t in self.tables.iter_mut().flatten() {
            let size = t.size();
            for c in t.take_way_changes() {
                self.cwt
                    .line_moved(ctx, size, c.cluster, c.way, c.entered)?;
            }
        }
        Ok(())
    }

    /// The ways whose `size` subtable lacks L2P entries: reported by the table, or, for a
    /// table not created yet, a way with no entry to spare.
    fn l2p_shortage(&mut self, size: PageSize) -> Vec<usize> {
        match self.tables[size.index()].as_mut() {
            Some(t) => t.take_l2p_shortage().into_iter().collect(),
            None if self.kind == HptKind::Mehpt => (0..self.cfg.ways)
                .filter(|&w| self.l2p.capacity(w, size) == 0)
                .collect(),
            None => Vec::new(),
        }
    }

    /// Make the other page sizes' subtables of way `w` give entries back by moving them to
    /// larger chunks: first the size holding the stolen middle, then the other (§V-A leaves
    /// this case open). Returns whether any did.
    fn make_l2p_room(&mut self, ctx: &mut PtContext, w: usize, size: PageSize) -> Result<bool> {
        let mut others: Vec<PageSize> = PageSize::ALL.into_iter().filter(|&s| s != size).collect();
        others.sort_by_key(|&s| std::cmp::Reverse(self.l2p.used(w, s)));
        for other in others {
            let Some(t) = self.tables[other.index()].as_mut() else {
                continue;
            };
            let mut env = Env {
                ctx,
                l2p: &mut self.l2p,
                cost: &self.cost,
                acct: &mut self.acct,
            };
            if t.coarsen(&mut env, w)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl PageTable for HashedPageTable {
    fn map(&mut self, ctx: &mut PtContext, vpn: Vpn, pfn: Pfn, size: PageSize) -> Result<()> {
        let mapped = self.map_lines(ctx, vpn.align_down(size), pfn, size);
        // Lines moved even if the mapping failed (cuckoo moves before the failure).
        self.sync_cwt(ctx)?;
        mapped
    }

    fn unmap(&mut self, ctx: &mut PtContext, vpn: Vpn, size: PageSize) -> Option<Pfn> {
        let vpn = vpn.align_down(size);
        let table = self.tables[size.index()].as_mut()?;
        let pfn = table.unmap(ctx.store, &self.l2p, vpn)?;
        // Clearing entries never allocates (their frame exists since the page was mapped).
        self.cwt
            .remove(ctx, vpn, size)
            .expect("CWT entries of a mapped page have their frame");
        self.sync_cwt(ctx)
            .expect("CWT entries of a mapped line have their frame");
        Some(pfn)
    }

    /// Points the page's PTE in its line at another frame. The CWT keeps naming the right
    /// way: the walk reads the line and takes the wrong frame from it.
    fn corrupt(&self, store: &mut PtStore, vpn: Vpn, size: PageSize) -> bool {
        self.table(size)
            .is_some_and(|t| t.corrupt(store, &self.l2p, vpn.align_down(size)))
    }

    fn take_alloc_cycles(&mut self) -> u64 {
        HashedPageTable::take_alloc_cycles(self)
    }

    fn take_rehash_cycles(&mut self) -> u64 {
        HashedPageTable::take_rehash_cycles(self)
    }

    fn stats(&self) -> Option<serde_json::Value> {
        Some(serde_json::to_value(HashedPageTable::stats(self)).expect("stats serialise"))
    }

    fn bytes(&self) -> u64 {
        self.acct.bytes + self.cwt.bytes()
    }
}
