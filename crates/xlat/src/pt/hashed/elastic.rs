//! One W-way elastic cuckoo table for one page size (ME-HPT §II-B), parameterised by where its
//! ways live and how they resize, so that ECPT and ME-HPT are the same code:
//!
//! * storage: one contiguous block per way (ECPT) or chunks behind the L2P table, with the
//!   chunk size chosen per way as the smallest whose chunks fit the L2P subtable (§IV-A/B);
//! * resizing out of place (a new block or chunk set with new hash functions, gradual
//!   migration through `P_i`) or in place (same function, one key bit more/less, §IV-C);
//! * all ways together on the table's occupancy, or one way at a time on its own occupancy
//!   with the balance rule and weighted insertion (§IV-D).
//!
//! Every translation lives only in the lines in simulated memory; the host keeps what the OS
//! would: per-way occupancy counters, hash generations, rehash pointers, chunk sizes.

use super::entry::{cluster_of, word_of, Line, LINE_BYTES};
use super::hash::{HashKind, WayHash};
use super::l2p::L2pTable;
use super::stats::{SizeStats, REINSERTION_BUCKETS};
use super::way::{Env, Gen, Resize, Slot, Storage, Way};
use crate::addr::{PageSize, Pfn, PhysAddr, Vpn};
use crate::error::{Error, Result};
use crate::pt::store::PtStore;
use crate::rng::Rng;

/// Largest way: 2^40 lines (64 TiB), far beyond any simulated memory.
const MAX_BITS: u32 = 40;

/// How a table's ways are stored and resized.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// `None`: one contiguous block per way; `Some(sizes)`: chunks of these sizes.
    pub chunk_sizes: Option<Vec<u64>>,
    pub in_place: bool,
    pub per_way: bool,
}

impl Policy {
    /// ECPT's: each way one contiguous block, all ways resized together, out of place.
    pub const ECPT: Policy = Policy {
        chunk_sizes: None,
        in_place: false,
        per_way: false,
    };
}

/// The parameters of one table.
#[derive(Clone, Debug)]
pub struct Params {
    pub ways: usize,
    pub initial_lines: u64,
    pub upsize: f64,
    pub downsize: f64,
    /// Key bits a resize adds (upsize) or removes (downsize): 1 doubles or halves.
    pub resize_bits: u32,
    pub hash: HashKind,
    pub hash_seed: u64,
    pub max_reinsertions: u32,
    pub rehash_per_insert: u32,
    /// OS cycles per entry moved (rehash or cuckoo re-insertion).
    pub rehash_cycles_per_entry: u64,
    pub policy: Policy,
    /// Name for error messages ("ECPT", "ME-HPT").
    pub name: &'static str,
}

/// A line entering or leaving a way (for the Cuckoo Walk Tables' way masks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WayChange {
    pub cluster: u64,
    pub way: usize,
    pub entered: bool,
}

/// One line a hardware walk would probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeLine {
    pub way: usize,
    pub addr: PhysAddr,
    /// In the old table of a resize in progress.
    pub old: bool,
    /// The line read from memory holds the cluster's tag and the page's PTE.
    pub hit: bool,
    /// The frame that PTE maps (when `hit`).
    pub pfn: Option<Pfn>,
}

pub struct ElasticTable {
    size: PageSize,
    p: Params,
    ways: Vec<Way>,
    rng: Rng,
    /// Lines in hand that are not in the table yet (the cuckoo chain's last victim, lines of
    /// a way being rebuilt), with the way they should go to. Empty between operations.
    homeless: Vec<(Line, Option<usize>)>,
    /// A way whose L2P subtable had no room for the chunks it needed (see
    /// [`ElasticTable::take_l2p_shortage`]).
    l2p_short: Option<usize>,
    /// Lines that entered or left a way since [`ElasticTable::take_way_changes`].
    way_log: Vec<WayChange>,
    pub stats: SizeStats,
}

impl ElasticTable {
    pub fn new(env: &mut Env, p: Params, size: PageSize, rng: Rng) -> Result<ElasticTable> {
        let bits = p.initial_lines.trailing_zeros();
        let mut t = ElasticTable {
            size,
            ways: Vec::with_capacity(p.ways),
            rng,
            homeless: Vec::new(),
            l2p_short: None,
            way_log: Vec::new(),
            stats: SizeStats {
                upsizes: vec![0; p.ways],
                downsizes: vec![0; p.ways],
                ..SizeStats::default()
            },
            p,
        };
        for w in 0..t.p.ways {
            let gen = t.gen(w, 0, bits);
            let storage = match t.alloc_storage(env, w, bits, 0) {
                Ok(s) => s,
                Err(e) => {
                    // Give back the ways already allocated: the table is not created.
                    for (v, way) in t.ways.iter().enumerate() {
                        env.free_storage(&mut t.stats, &way.storage, v, size);
                        env.l2p.set_used(v, size, 0)?;
                    }
                    return Err(e);
                }
            };
            t.ways.push(Way {
                gen,
                storage,
                resize: None,
                occupancy: 0,
                functions: 1,
                downsize_armed: true,
            });
        }
        t.note_l2p(env.l2p);
        Ok(t)
    }

    pub fn size(&self) -> PageSize {
        self.size
    }
    pub fn ways(&self) -> &[Way] {
        &self.ways
    }

    /// Hash function number `function` of way `w`.
    fn gen(&self, w: usize, function: usize, bits: u32) -> Gen {
        let id = w + function * self.p.ways;
        let seed = self.p.hash_seed ^ (self.size.index() as u64) << 56;
        Gen {
            hash: WayHash::new(self.p.hash, id, seed),
            bits,
        }
    }

    fn what(&self, w: usize) -> String {
        format!("{} {} way {w}", self.p.name, self.size)
    }

    // ---- lookups -------------------------------------------------------------------------

    fn addr_of(&self, l2p: &L2pTable, w: usize, cluster: u64) -> (PhysAddr, bool) {
        let slot = self.ways[w].locate(cluster);
        (
            self.ways[w].slot_addr(slot, l2p, w, self.size),
            matches!(slot, Slot::Old(_)),
        )
    }

    /// The way, address and contents of `cluster`'s line, found by reading memory.
    fn find(
        &self,
        store: &PtStore,
        l2p: &L2pTable,
        cluster: u64,
    ) -> Option<(usize, PhysAddr, Line)> {
        (0..self.ways.len()).find_map(|w| {
            let (addr, _) = self.addr_of(l2p, w, cluster);
            let line = Line::read(store, addr);
            line.holds(cluster).then_some((w, addr, line))
        })
    }

    /// The frame mapping the page at `vpn`, from the stored lines alone.
    pub fn lookup(&self, store: &PtStore, l2p: &L2pTable, vpn: Vpn) -> Option<Pfn> {
        let (_, _, line) = self.find(store, l2p, cluster_of(vpn, self.size))?;
        line.pte(word_of(vpn, self.size))
    }

    /// Fault injection ([`crate::pt::PageTable::corrupt`]): point the PTE of the page at `vpn`
    /// in its stored line at another frame. Returns whether the table maps the page.
    pub fn corrupt(&self, store: &mut PtStore, l2p: &L2pTable, vpn: Vpn) -> bool {
        let word = word_of(vpn, self.size);
        let Some((_, addr, mut line)) = self.find(store, l2p, cluster_of(vpn, self.size)) else {
            return false;
        };
        let Some(pfn) = line.pte(word) else {
            return false;
        };
        line.set_pte(word, Some(crate::pt::misdirected(pfn, self.size)));
        line.write(store, addr);
        true
    }

    /// The W lines a hardware walk probes in parallel for `vpn` in the current resize state;
    /// returns how many were written to `out` (at most `out.len()`).
    ///
    /// A cluster's line is in one way at most (an insert first looks for it in every way), so
    /// once a way holds it the others' lines cannot: they are not read from the store. On
    /// tables far larger than the host's caches each read is a host cache miss, most of a
    /// walk's host time (a hit reads (W + 1) / 2 lines on average, not W).
    pub fn probe(&self, store: &PtStore, l2p: &L2pTable, vpn: Vpn, out: &mut [ProbeLine]) -> usize {
        let cluster = cluster_of(vpn, self.size);
        let word = word_of(vpn, self.size);
        let n = self.ways.len().min(out.len());
        let mut found = false;
        for (w, o) in out.iter_mut().enumerate().take(n) {
            let (addr, old) = self.addr_of(l2p, w, cluster);
            debug_assert!(!found || !Line::read(store, addr).holds(cluster));
            let pfn = if found {
                None
            } else {
                let line = Line::read(store, addr);
                found = line.holds(cluster);
                if found {
                    line.pte(word)
                } else {
                    None
                }
            };
            *o = ProbeLine {
                way: w,
                addr,
                old,
                hit: pfn.is_some(),
                pfn,
            };
        }
        n
    }

    /// Address of logical line `index` of way `w`'s current table (the walker's L2P path).
    pub fn line_addr(&self, l2p: &L2pTable, w: usize, index: u64) -> Option<PhysAddr> {
        let way = self.ways.get(w)?;
        (index < way.lines()).then(|| way.storage.line_addr(l2p, w, self.size, index))
    }

    fn log(&mut self, cluster: u64, way: usize, entered: bool) {
        self.way_log.push(WayChange {
            cluster,
            way,
            entered,
        });
    }

    /// The lines that entered or left a way since the last call, in order.
    pub fn take_way_changes(&mut self) -> Vec<WayChange> {
        std::mem::take(&mut self.way_log)
    }

    // ---- map / unmap ---------------------------------------------------------------------

    /// Map the page at `vpn` to `pfn`; returns whether the page was unmapped before.
    pub fn map(&mut self, env: &mut Env, vpn: Vpn, pfn: Pfn) -> Result<bool> {
        self.settle(env)?;
        let cluster = cluster_of(vpn, self.size);
        let word = word_of(vpn, self.size);
        let fresh = match self.find(env.ctx.store, env.l2p, cluster) {
            Some((_, addr, mut line)) => {
                let fresh = line.pte(word).is_none();
                line.set_pte(word, Some(pfn));
                line.write(env.ctx.store, addr);
                fresh
            }
            None => {
                let mut line = Line::new(cluster);
                line.set_pte(word, Some(pfn));
                self.stats.line_inserts += 1;
                self.homeless.push((line, None));
                self.settle(env)?;
                true
            }
        };
        // The OS was invoked: migrate some entries of every resizing way (§II-B), then
        // check the occupancy thresholds.
        for w in 0..self.ways.len() {
            // A step moves an entry of a way being resized and does nothing otherwise, so
            // the loop ends when the way is not (or no longer) resizing: the count bounds the
            // entries moved, and a large one drains the old table without spinning on.
            for _ in 0..self.p.rehash_per_insert {
                if self.ways[w].resize.is_none() {
                    break;
                }
                self.rehash_step(env, w)?;
            }
        }
        self.settle(env)?;
        self.check_thresholds(env)?;
        self.settle(env)?;
        Ok(fresh)
    }

    /// Unmap the page at `vpn`; returns the frame it mapped. A line left without PTEs is
    /// freed. Downsizes are decided at the next insertion, when the OS rehashes anyway.
    pub fn unmap(&mut self, store: &mut PtStore, l2p: &L2pTable, vpn: Vpn) -> Option<Pfn> {
        let cluster = cluster_of(vpn, self.size);
        let word = word_of(vpn, self.size);
        let (w, addr, mut line) = self.find(store, l2p, cluster)?;
        let pfn = line.pte(word)?;
        line.set_pte(word, None);
        if line.is_live() {
            line.write(store, addr);
        } else {
            Line::clear(store, addr);
            self.ways[w].occupancy -= 1;
            self.log(line.tag(), w, false);
            self.stats.line_deletes += 1;
        }
        Some(pfn)
    }

    // ---- cuckoo placement ----------------------------------------------------------------

    /// Put `line` into way `w` at its slot, kicking any occupant into another way, up to the
    /// re-insertion bound; returns the line still in hand if the bound was hit.
    fn place(&mut self, env: &mut Env, line: Line, w: usize) -> Result<Option<Line>> {
        self.place_bounded(env, line, w, self.p.max_reinsertions as usize)
    }

    fn place_bounded(
        &mut self,
        env: &mut Env,
        mut line: Line,
        mut w: usize,
        bound: usize,
    ) -> Result<Option<Line>> {
        for evictions in 0..=bound {
            let (addr, _) = self.addr_of(env.l2p, w, line.tag());
            let occupant = Line::read(env.ctx.store, addr);
            line.write(env.ctx.store, addr);
            self.log(line.tag(), w, true);
            if !occupant.is_live() {
                self.ways[w].occupancy += 1;
                self.stats.reinsertions[evictions.min(REINSERTION_BUCKETS - 1)] += 1;
                return Ok(None);
            }
            self.log(occupant.tag(), w, false);
            self.charge_moves(env, 1, false);
            line = occupant;
            w = self.pick_other_way(w);
        }
        self.stats.reinsertions[REINSERTION_BUCKETS - 1] += 1;
        Ok(Some(line))
    }

    /// Place every line in hand, upsizing when the re-insertion bound is hit, so that no
    /// entry is ever lost.
    fn settle(&mut self, env: &mut Env) -> Result<()> {
        while let Some((line, way)) = self.homeless.pop() {
            let w = way.unwrap_or_else(|| self.choose_way());
            if let Some(left) = self.place(env, line, w)? {
                self.homeless.push((left, None));
                if let Err(e) = self.force_grow(env) {
                    self.rescue(env)?;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The table could not grow (no memory): keep the lines in hand anyway by cuckooing
    /// much longer than the bound, so that the failure loses no translation (a table below
    /// the upsize threshold almost always has room).
    fn rescue(&mut self, env: &mut Env) -> Result<()> {
        let bound = self.p.max_reinsertions as usize * 64;
        let mut stuck = Vec::new();
        while let Some((line, way)) = self.homeless.pop() {
            let w = way.unwrap_or_else(|| self.choose_way());
            if let Some(left) = self.place_bounded(env, line, w, bound)? {
                stuck.push((left, None));
            }
        }
        self.homeless = stuck;
        Ok(())
    }

    /// Per-way insertion weights `FREE_i` (§IV-D): free slots of the way, zero for a way that
    /// is larger than another and already at the upsize threshold.
    pub fn way_weights(&self) -> Vec<f64> {
        let smallest = self.ways.iter().map(Way::lines).min().unwrap_or(0);
        self.ways
            .iter()
            .map(|w| {
                let free = w.lines().saturating_sub(w.occupancy) as f64;
                let full = w.occupancy as f64 >= self.p.upsize * w.lines() as f64;
                if w.lines() > smallest && full {
                    0.0
                } else {
                    free
                }
            })
            .collect()
    }

    /// Draw a way with probability `weights[i] / sum` (uniform if all are zero).
    pub fn draw_weighted(rng: &mut Rng, weights: &[f64]) -> usize {
        let sum: f64 = weights.iter().sum();
        if sum <= 0.0 {
            return rng.below(weights.len() as u64) as usize;
        }
        let mut u = rng.unit() * sum;
        for (i, &wt) in weights.iter().enumerate() {
            if u < wt {
                return i;
            }
            u -= wt;
        }
        weights
            .iter()
            .rposition(|&wt| wt > 0.0)
            .expect("positive sum")
    }

    /// The way a new line goes to: weighted (per-way resizing) or uniform (§II-B).
    pub fn choose_way(&mut self) -> usize {
        if self.p.policy.per_way {
            let weights = self.way_weights();
            Self::draw_weighted(&mut self.rng, &weights)
        } else {
            self.rng.below(self.ways.len() as u64) as usize
        }
    }

    /// The way an evicted line is re-inserted into: any way but the one it left. With per-way
    /// resizing, weighted by free slots; the zero weight of a full larger way (§IV-D) applies
    /// to new insertions only, since excluding a way from re-insertions would leave the cuckoo
    /// walk fewer ways and make it fail at much lower occupancy.
    fn pick_other_way(&mut self, from: usize) -> usize {
        if self.p.policy.per_way {
            let mut weights: Vec<f64> = self
                .ways
                .iter()
                .map(|w| w.lines().saturating_sub(w.occupancy) as f64)
                .collect();
            weights[from] = 0.0;
            if weights.iter().sum::<f64>() > 0.0 {
                return Self::draw_weighted(&mut self.rng, &weights);
            }
        }
        let r = self.rng.below(self.ways.len() as u64 - 1) as usize;
        if r >= from {
            r + 1
        } else {
            r
        }
    }

    // ---- resizing ------------------------------------------------------------------------

    fn initial_bits(&self) -> u32 {
        self.p.initial_lines.trailing_zeros()
    }

    fn check_thresholds(&mut self, env: &mut Env) -> Result<()> {
        let (up, down) = (self.p.upsize, self.p.downsize);
        for way in &mut self.ways {
            if way.occupancy as f64 > down * way.lines() as f64 {
                way.downsize_armed = true;
            }
        }
        if self.p.policy.per_way {
            for w in 0..self.ways.len() {
                let way = &self.ways[w];
                let (occ, lines) = (way.occupancy as f64, way.lines() as f64);
                let smallest = self.ways.iter().map(Way::lines).min().unwrap_or(0);
                let largest = self.ways.iter().map(Way::lines).max().unwrap_or(0);
                if occ > up * lines && way.lines() == smallest {
                    self.drain(env, w)?;
                    self.start_resize(env, w, true)?;
                } else if occ < down * lines
                    && way.gen.bits >= self.initial_bits() + self.p.resize_bits
                    && way.lines() == largest
                    && way.resize.is_none()
                    && way.downsize_armed
                {
                    self.start_resize(env, w, false)?;
                }
            }
        } else {
            let occ: u64 = self.ways.iter().map(|w| w.occupancy).sum();
            let lines: u64 = self.ways.iter().map(Way::lines).sum();
            if occ as f64 > up * lines as f64 {
                self.resize_all(env, true)?;
            } else if (occ as f64) < down * lines as f64
                && self.ways[0].gen.bits >= self.initial_bits() + self.p.resize_bits
                && self
                    .ways
                    .iter()
                    .all(|w| w.resize.is_none() && w.downsize_armed)
            {
                self.resize_all(env, false)?;
            }
        }
        Ok(())
    }

    fn resize_all(&mut self, env: &mut Env, upsize: bool) -> Result<()> {
        for w in 0..self.ways.len() {
            self.drain(env, w)?;
        }
        for w in 0..self.ways.len() {
            self.start_resize(env, w, upsize)?;
        }
        Ok(())
    }

    /// The re-insertion bound was hit: upsize (a smallest way, or all ways) and finish the
    /// migration now, so the table really has more room before the retry.
    fn force_grow(&mut self, env: &mut Env) -> Result<()> {
        self.stats.forced_upsizes += 1;
        let grown: Vec<usize> = if self.p.policy.per_way {
            // A smallest way (balance rule), the fullest of them.
            let smallest = self.ways.iter().map(Way::lines).min().expect("ways");
            let w = (0..self.ways.len())
                .filter(|&w| self.ways[w].lines() == smallest)
                .max_by_key(|&w| self.ways[w].occupancy)
                .expect("a smallest way");
            self.drain(env, w)?;
            self.start_resize(env, w, true)?;
            vec![w]
        } else {
            self.resize_all(env, true)?;
            (0..self.ways.len()).collect()
        };
        for w in grown {
            self.ways[w].downsize_armed = false;
            self.drain(env, w)?;
        }
        Ok(())
    }

    /// Chunks of `chunk` bytes needed for a way of `2^bits` lines.
    fn chunks_for(bits: u32, chunk: u64) -> usize {
        ((1u64 << bits) * LINE_BYTES).div_ceil(chunk) as usize
    }

    /// The smallest chunk size whose chunks for `2^bits` lines fit way `w`'s L2P subtable.
    fn pick_chunk(&mut self, l2p: &L2pTable, w: usize, bits: u32) -> Result<u64> {
        let sizes = self.p.policy.chunk_sizes.as_ref().expect("chunked policy");
        let cap = l2p.capacity(w, self.size);
        let found = sizes
            .iter()
            .copied()
            .find(|&c| Self::chunks_for(bits, c) <= cap);
        found.ok_or_else(|| {
            self.l2p_short = Some(w);
            Error::OutOfMemory(format!(
                "{}: {} lines do not fit {cap} L2P entries with any chunk size",
                self.what(w),
                1u64 << bits
            ))
        })
    }

    /// Upsize way `w` now and migrate all of it (no occupancy threshold, no balance rule):
    /// how [`super::limits`] grows a real table to its limit without filling it.
    pub(super) fn upsize_way_now(&mut self, env: &mut Env, w: usize) -> Result<()> {
        self.start_resize(env, w, true)?;
        self.drain(env, w)?;
        self.settle(env)
    }

    /// The chunk size way `w` would use after one more upsize (the L2P rule of §V-B), or the
    /// error the upsize would fail with.
    pub(super) fn next_upsize_chunk(&mut self, l2p: &L2pTable, w: usize) -> Result<u64> {
        let bits = self.ways[w].gen.bits + self.p.resize_bits;
        self.pick_chunk(l2p, w, bits)
    }

    /// The chunk size way `w` uses now (`None` for an ECPT block).
    pub fn chunk_bytes(&self, w: usize) -> Option<u64> {
        match self.ways[w].storage {
            Storage::Chunks { chunk_bytes, .. } => Some(chunk_bytes),
            Storage::Block { .. } => None,
        }
    }

    /// The way whose L2P subtable last ran out of entries, if any (cleared by the call): the
    /// process-level table can then make another page size's subtable give entries back.
    pub fn take_l2p_shortage(&mut self) -> Option<usize> {
        self.l2p_short.take()
    }

    /// Move way `w` to the next larger chunk size, so that it uses fewer L2P entries (the
    /// way's size is unchanged). Returns false if it cannot use fewer.
    pub fn coarsen(&mut self, env: &mut Env, w: usize) -> Result<bool> {
        let Storage::Chunks {
            chunk_bytes, count, ..
        } = self.ways[w].storage
        else {
            return Ok(false);
        };
        let sizes = self.p.policy.chunk_sizes.as_ref().expect("chunked policy");
        let bits = self.ways[w].gen.bits;
        let Some(bigger) = sizes.iter().copied().find(|&c| c > chunk_bytes) else {
            return Ok(false);
        };
        if Self::chunks_for(bits, bigger) >= count {
            return Ok(false);
        }
        self.drain(env, w)?;
        self.stats.chunk_transitions += 1;
        self.rebuild(env, w, bits, bigger, false)?;
        self.settle(env)?;
        Ok(true)
    }

    /// Allocate fresh storage for way `w` with `2^bits` lines (chunks from L2P entry `first`).
    fn alloc_storage(
        &mut self,
        env: &mut Env,
        w: usize,
        bits: u32,
        first: usize,
    ) -> Result<Storage> {
        let bytes = (1u64 << bits) * LINE_BYTES;
        let what = self.what(w);
        match &self.p.policy.chunk_sizes {
            None => {
                let base = env.alloc_block(&mut self.stats, bytes, &what)?;
                let order = (bytes.max(4096) / 4096).trailing_zeros();
                Ok(Storage::Block { base, order })
            }
            Some(_) => {
                let chunk = self.pick_chunk(env.l2p, w, bits)?;
                let count = Self::chunks_for(bits, chunk);
                self.alloc_chunks(env, w, chunk, first, count)?;
                Ok(Storage::Chunks {
                    chunk_bytes: chunk,
                    first,
                    count,
                })
            }
        }
    }

    /// Allocate chunks for L2P entries `first..first+count` of way `w` (growing the subtable
    /// to `first+count`). On failure nothing stays allocated.
    fn alloc_chunks(
        &mut self,
        env: &mut Env,
        w: usize,
        chunk: u64,
        first: usize,
        count: usize,
    ) -> Result<()> {
        let what = format!("{} chunk", self.what(w));
        let mut got = Vec::with_capacity(count);
        for _ in 0..count {
            match env.alloc_block(&mut self.stats, chunk, &what) {
                Ok(p) => got.push(p),
                Err(e) => {
                    for p in got {
                        env.free_block(&mut self.stats, p, chunk);
                    }
                    return Err(e);
                }
            }
        }
        let end = first + count;
        if end > env.l2p.used(w, self.size) {
            if let Err(e) = env.l2p.set_used(w, self.size, end) {
                for p in got {
                    env.free_block(&mut self.stats, p, chunk);
                }
                return Err(e);
            }
        }
        for (k, p) in got.into_iter().enumerate() {
            env.l2p.set_entry(w, self.size, first + k, Some(p));
        }
        self.note_l2p(env.l2p);
        Ok(())
    }

    fn note_l2p(&mut self, l2p: &L2pTable) {
        let used: usize = (0..self.p.ways).map(|w| l2p.used(w, self.size)).sum();
        self.stats.l2p_entries_peak = self.stats.l2p_entries_peak.max(used as u64);
    }

    /// Begin resizing way `w` to twice (`upsize`) or half its lines.
    fn start_resize(&mut self, env: &mut Env, w: usize, upsize: bool) -> Result<()> {
        debug_assert!(self.ways[w].resize.is_none());
        let old_bits = self.ways[w].gen.bits;
        let k = self.p.resize_bits;
        let bits = if upsize { old_bits + k } else { old_bits - k };
        if bits > MAX_BITS {
            return Err(Error::OutOfMemory(format!(
                "{}: a way of 2^{bits} lines is beyond any memory",
                self.what(w)
            )));
        }
        if upsize {
            self.stats.upsizes[w] += 1;
        } else {
            self.stats.downsizes[w] += 1;
        }
        let old_storage = self.ways[w].storage.clone();
        let (in_place, out_of_place_fits) = match old_storage {
            Storage::Block { .. } => (false, true),
            Storage::Chunks {
                chunk_bytes, count, ..
            } => {
                let chunk = self.pick_chunk(env.l2p, w, bits)?;
                if chunk != chunk_bytes {
                    // A change of chunk size is out of place by construction (§IV-C).
                    self.stats.chunk_transitions += 1;
                    return self.rebuild(env, w, bits, chunk, upsize);
                }
                let need = Self::chunks_for(bits, chunk);
                let fits = count + need <= env.l2p.capacity(w, self.size);
                (self.p.policy.in_place, fits)
            }
        };
        let old_gen = self.ways[w].gen;
        if in_place {
            if let Storage::Chunks {
                chunk_bytes,
                first,
                count,
            } = old_storage
            {
                let need = Self::chunks_for(bits, chunk_bytes);
                if need > count {
                    self.alloc_chunks(env, w, chunk_bytes, first + count, need - count)?;
                    self.ways[w].storage = Storage::Chunks {
                        chunk_bytes,
                        first,
                        count: need,
                    };
                }
            }
            let way = &mut self.ways[w];
            way.gen.bits = bits;
            way.resize = Some(Resize {
                old: old_gen,
                old_storage: None,
                pointer: 0,
                upsize,
            });
        } else if out_of_place_fits {
            let first = match old_storage {
                Storage::Chunks { first, count, .. } => first + count,
                Storage::Block { .. } => 0,
            };
            let storage = self.alloc_storage(env, w, bits, first)?;
            let gen = self.gen(w, self.ways[w].functions, bits);
            let way = &mut self.ways[w];
            way.functions += 1;
            way.gen = gen;
            way.resize = Some(Resize {
                old: old_gen,
                old_storage: Some(std::mem::replace(&mut way.storage, storage)),
                pointer: 0,
                upsize,
            });
        } else {
            // Old and new chunks cannot both be in the L2P subtable: rebuild at once.
            let chunk = self.pick_chunk(env.l2p, w, bits)?;
            return self.rebuild(env, w, bits, chunk, upsize);
        }
        Ok(())
    }

    /// Out-of-place resize of way `w` done in one OS invocation: allocate the new storage,
    /// rehash every line of the way into it, free the old storage. Used for a change of chunk
    /// size, when the L2P subtable cannot hold the old and new chunks together, and to give
    /// L2P entries back ([`ElasticTable::coarsen`]).
    fn rebuild(
        &mut self,
        env: &mut Env,
        w: usize,
        bits: u32,
        chunk: u64,
        upsize: bool,
    ) -> Result<()> {
        let count = Self::chunks_for(bits, chunk);
        // Allocate before touching anything, so that a failure loses nothing.
        let what = format!("{} chunk", self.what(w));
        let mut got = Vec::with_capacity(count);
        for _ in 0..count {
            match env.alloc_block(&mut self.stats, chunk, &what) {
                Ok(p) => got.push(p),
                Err(e) => {
                    for p in got {
                        env.free_block(&mut self.stats, p, chunk);
                    }
                    return Err(e);
                }
            }
        }
        let lines: Vec<Line> = self.ways[w]
            .all_slots(env.l2p, w, self.size)
            .into_iter()
            .map(|a| Line::read(env.ctx.store, a))
            .filter(Line::is_live)
            .collect();
        let way = self.ways[w].clone();
        env.free_storage(&mut self.stats, &way.storage, w, self.size);
        if let Some(old) = way.resize.as_ref().and_then(|r| r.old_storage.as_ref()) {
            env.free_storage(&mut self.stats, old, w, self.size);
        }
        env.l2p.set_used(w, self.size, count)?;
        for (k, p) in got.into_iter().enumerate() {
            env.l2p.set_entry(w, self.size, k, Some(p));
        }
        self.note_l2p(env.l2p);
        if upsize {
            self.stats.upsize_entries_rehashed += lines.len() as u64;
            self.stats.upsize_entries_moved += lines.len() as u64;
        }
        self.charge_moves(env, lines.len() as u64, true);
        let gen = self.gen(w, way.functions, bits);
        let way = &mut self.ways[w];
        way.functions += 1;
        way.gen = gen;
        way.storage = Storage::Chunks {
            chunk_bytes: chunk,
            first: 0,
            count,
        };
        way.resize = None;
        way.occupancy = 0;
        for l in &lines {
            self.log(l.tag(), w, false);
        }
        self.homeless
            .extend(lines.into_iter().map(|l| (l, Some(w))));
        Ok(())
    }

    /// The OS moved `n` entries: rehashes into a resized way (`rehash`) or cuckoo
    /// re-insertions. Each costs `rehash_cycles_per_entry`, charged to the operation in
    /// progress (the fault whose handler does the work).
    fn charge_moves(&mut self, env: &mut Env, n: u64, rehash: bool) {
        if rehash {
            self.stats.rehash_entries_moved += n;
        } else {
            self.stats.cuckoo_reinsertions += n;
        }
        let cycles = n * self.p.rehash_cycles_per_entry;
        self.stats.rehash_cycles += cycles;
        env.acct.pending_rehash_cycles += cycles;
    }

    /// Migrate the next live entry of way `w`'s old table (if it is resizing): the entry at
    /// `P_i` goes to its slot in the new table, `P_i` advances; when the whole old table is
    /// migrated the resize ends.
    fn rehash_step(&mut self, env: &mut Env, w: usize) -> Result<()> {
        let Some(r) = &self.ways[w].resize else {
            return Ok(());
        };
        let (upsize, old_lines) = (r.upsize, r.old.lines());
        loop {
            let r = self.ways[w].resize.as_mut().expect("resizing");
            if r.pointer >= old_lines {
                return self.finish_resize(env, w);
            }
            let k = r.pointer;
            let from = self.ways[w].slot_addr(Slot::Old(k), env.l2p, w, self.size);
            self.ways[w].resize.as_mut().expect("resizing").pointer += 1;
            let line = Line::read(env.ctx.store, from);
            if !line.is_live() {
                continue;
            }
            let (to, _) = self.addr_of(env.l2p, w, line.tag());
            if upsize {
                self.stats.upsize_entries_rehashed += 1;
                self.stats.upsize_entries_moved += (to != from) as u64;
            }
            if to != from {
                self.charge_moves(env, 1, true);
                Line::clear(env.ctx.store, from);
                self.ways[w].occupancy -= 1;
                self.log(line.tag(), w, false);
                if let Some(left) = self.place(env, line, w)? {
                    self.homeless.push((left, None));
                }
            }
            if self.ways[w].resize.as_ref().expect("resizing").pointer >= old_lines {
                return self.finish_resize(env, w);
            }
            return Ok(());
        }
    }

    /// Migrate all of way `w`'s old table now.
    fn drain(&mut self, env: &mut Env, w: usize) -> Result<()> {
        while self.ways[w].resize.is_some() {
            self.rehash_step(env, w)?;
        }
        Ok(())
    }

    fn finish_resize(&mut self, env: &mut Env, w: usize) -> Result<()> {
        let r = self.ways[w].resize.take().expect("resizing");
        match (&r.old_storage, self.ways[w].storage.clone()) {
            (Some(old), new) => {
                env.free_storage(&mut self.stats, old, w, self.size);
                // The new chunks move down to the start of the L2P subtable.
                if let Storage::Chunks {
                    chunk_bytes,
                    first,
                    count,
                } = new
                {
                    for k in 0..count {
                        let e = env.l2p.entry(w, self.size, first + k);
                        env.l2p.set_entry(w, self.size, k, e);
                    }
                    env.l2p.set_used(w, self.size, count)?;
                    self.ways[w].storage = Storage::Chunks {
                        chunk_bytes,
                        first: 0,
                        count,
                    };
                }
            }
            (
                None,
                Storage::Chunks {
                    chunk_bytes,
                    first,
                    count,
                },
            ) => {
                // In-place downsize: the chunks beyond the halved way are freed.
                let need = Self::chunks_for(self.ways[w].gen.bits, chunk_bytes);
                if need < count {
                    let tail = Storage::Chunks {
                        chunk_bytes,
                        first: first + need,
                        count: count - need,
                    };
                    env.free_storage(&mut self.stats, &tail, w, self.size);
                    env.l2p.set_used(w, self.size, first + need)?;
                    self.ways[w].storage = Storage::Chunks {
                        chunk_bytes,
                        first,
                        count: need,
                    };
                }
            }
            (None, Storage::Block { .. }) => unreachable!("blocks never resize in place"),
        }
        Ok(())
    }

    // ---- inspection ----------------------------------------------------------------------

    /// Bytes held by the table's ways (old and new tables together).
    pub fn bytes(&self) -> u64 {
        self.ways.iter().map(Way::bytes).sum()
    }

    /// The stats with the ways' current sizes filled in.
    pub fn snapshot(&self) -> SizeStats {
        let mut s = self.stats.clone();
        s.way_bytes = self.ways.iter().map(Way::bytes).collect();
        s
    }

    /// Check the table against its own rules by scanning memory: every live line sits where
    /// its way's lookup looks for it, no cluster has two live lines, the occupancy counters
    /// and byte counts match, and no way is more than twice another. Returns the live lines
    /// as (way, cluster).
    pub fn audit(
        &self,
        store: &PtStore,
        l2p: &L2pTable,
    ) -> std::result::Result<Vec<(usize, u64)>, String> {
        let mut seen = std::collections::HashSet::new();
        let mut lines = Vec::new();
        for (w, way) in self.ways.iter().enumerate() {
            let mut live = 0;
            for addr in way.all_slots(l2p, w, self.size) {
                let line = Line::read(store, addr);
                if !line.is_live() {
                    continue;
                }
                live += 1;
                let c = line.tag();
                let (home, _) = self.addr_of(l2p, w, c);
                if home != addr {
                    return Err(format!(
                        "{} way {w}: cluster {c:#x} at {addr:?}, lookup goes to {home:?}",
                        self.size
                    ));
                }
                if !seen.insert(c) {
                    return Err(format!("{}: cluster {c:#x} has two live lines", self.size));
                }
                lines.push((w, c));
            }
            if live != way.occupancy {
                return Err(format!(
                    "{} way {w}: counter {} but {live} live lines",
                    self.size, way.occupancy
                ));
            }
        }
        if !self.homeless.is_empty() {
            return Err(format!(
                "{}: {} lines not placed",
                self.size,
                self.homeless.len()
            ));
        }
        if self.bytes() != self.stats.current_bytes {
            return Err(format!(
                "{}: ways hold {} bytes, stats say {}",
                self.size,
                self.bytes(),
                self.stats.current_bytes
            ));
        }
        let min = self.ways.iter().map(Way::lines).min().unwrap_or(0);
        let max = self.ways.iter().map(Way::lines).max().unwrap_or(0);
        if max > 2 * min {
            return Err(format!("{}: ways of {min} and {max} lines", self.size));
        }
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::physmem::BuddyAllocator;
    use crate::pt::hashed::cost::{paper_points, CostModel};
    use crate::pt::hashed::way::ProcAcct;
    use crate::pt::PtContext;

    struct Mem {
        buddy: BuddyAllocator,
        store: PtStore,
        l2p: L2pTable,
        cost: CostModel,
        acct: ProcAcct,
    }

    impl Mem {
        fn new() -> Mem {
            Mem {
                buddy: BuddyAllocator::new((1 << 30) / 4096),
                store: PtStore::new(),
                l2p: L2pTable::new(3, 4096, false),
                cost: CostModel::new(&paper_points()),
                acct: ProcAcct::default(),
            }
        }
        fn with<R>(&mut self, f: impl FnOnce(&mut Env) -> R) -> R {
            let mut ctx = PtContext {
                store: &mut self.store,
                buddy: &mut self.buddy,
            };
            let mut env = Env {
                ctx: &mut ctx,
                l2p: &mut self.l2p,
                cost: &self.cost,
                acct: &mut self.acct,
            };
            f(&mut env)
        }
    }

    /// An in-place, per-way ME-HPT table with fixed 4 KiB chunks and thresholds that never
    /// fire, so the tests drive resizes themselves.
    fn params(hash: HashKind, initial_lines: u64) -> Params {
        Params {
            ways: 3,
            initial_lines,
            upsize: 0.99,
            downsize: 0.0,
            resize_bits: 1,
            hash,
            hash_seed: 9,
            max_reinsertions: 32,
            rehash_per_insert: 1,
            rehash_cycles_per_entry: 250,
            policy: Policy {
                chunk_sizes: Some(vec![4096]),
                in_place: true,
                per_way: true,
            },
            name: "ME-HPT",
        }
    }

    fn new_table(m: &mut Mem, p: Params) -> ElasticTable {
        m.with(|env| ElasticTable::new(env, p, PageSize::Size4K, Rng::new(3, 3)))
            .unwrap()
    }

    /// Random cluster numbers (random keys).
    fn clusters(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = Rng::new(seed, 77);
        let mut set = std::collections::BTreeSet::new();
        while set.len() < n {
            set.insert(rng.next_u64() >> 20);
        }
        set.into_iter().collect()
    }

    fn map_clusters(m: &mut Mem, t: &mut ElasticTable, cs: &[u64]) {
        for (i, &c) in cs.iter().enumerate() {
            m.with(|env| t.map(env, Vpn(c * 8), Pfn(i as u64 + 1)))
                .unwrap();
        }
    }

    fn live_lines(m: &Mem, t: &ElasticTable, w: usize) -> Vec<(PhysAddr, u64)> {
        t.ways[w]
            .all_slots(&m.l2p, w, t.size)
            .into_iter()
            .map(|a| (a, Line::read(&m.store, a)))
            .filter(|(_, l)| l.is_live())
            .map(|(a, l)| (a, l.tag()))
            .collect()
    }

    #[test]
    fn in_place_upsize_moves_exactly_the_entries_whose_extra_bit_is_one() {
        for kind in [HashKind::Crc, HashKind::City] {
            let mut m = Mem::new();
            let mut t = new_table(&mut m, params(kind, 4096));
            let cs = clusters(6000, kind as u64);
            map_clusters(&mut m, &mut t, &cs);
            let before = live_lines(&m, &t, 0);
            let others: Vec<u64> = t.ways[1..].iter().map(|w| w.occupancy).collect();
            let old = t.ways[0].gen;
            let charged = m.acct.pending_rehash_cycles;
            let (moves, cuckoos) = (t.stats.rehash_entries_moved, t.stats.cuckoo_reinsertions);
            m.with(|env| t.start_resize(env, 0, true)).unwrap();
            assert_eq!(
                t.ways[0].gen.hash, old.hash,
                "in place keeps the hash function"
            );
            m.with(|env| t.drain(env, 0)).unwrap();
            let mut moved = 0;
            for &(addr, c) in &before {
                let k = old.key(c);
                let extra = (old.hash.hash(c) >> old.bits) & 1;
                let index = k + (extra << old.bits);
                let expect = t.ways[0].storage.line_addr(&m.l2p, 0, t.size, index);
                assert_eq!(
                    expect == addr,
                    extra == 0,
                    "{kind:?}: stays iff the bit is 0"
                );
                assert!(
                    Line::read(&m.store, expect).holds(c),
                    "{kind:?}: {c:#x} not at {expect:?}"
                );
                moved += extra;
            }
            let frac = moved as f64 / before.len() as f64;
            assert!((0.45..=0.55).contains(&frac), "{kind:?}: moved {frac}");
            // The OS is charged for exactly those moves, and nothing cuckoos.
            assert_eq!(t.stats.rehash_entries_moved - moves, moved);
            assert_eq!(t.stats.cuckoo_reinsertions, cuckoos);
            assert_eq!(m.acct.pending_rehash_cycles - charged, moved * 250);
            assert_eq!(t.stats.upsize_entries_moved, moved);
            assert_eq!(t.stats.upsize_entries_rehashed, before.len() as u64);
            let now: Vec<u64> = t.ways[1..].iter().map(|w| w.occupancy).collect();
            assert_eq!(now, others, "an in-place upsize never cuckoos");
            assert_eq!(t.audit(&m.store, &m.l2p).map(|l| l.len()), Ok(6000));
        }
    }

    /// The rehash cost of one upsize from real tables: ECPT's out-of-place upsize moves every
    /// one of the N entries of the table; ME-HPT's per-way, in-place upsize moves only the
    /// entries of one way whose extra key bit is 1 (about half of that way). Every move and
    /// every cuckoo re-insertion it causes is charged `rehash_cycles_per_entry`.
    #[test]
    fn upsize_charges_every_entry_for_ecpt_and_the_moved_half_way_for_mehpt() {
        let n = 1500;
        let cs = clusters(n, 11);
        // ECPT: all three ways resize together, out of place.
        let mut m = Mem::new();
        let mut p = params(HashKind::Crc, 1024);
        p.policy = Policy::ECPT;
        p.name = "ECPT";
        let mut t = new_table(&mut m, p);
        map_clusters(&mut m, &mut t, &cs);
        let (moves0, cuckoo0) = (t.stats.rehash_entries_moved, t.stats.cuckoo_reinsertions);
        assert_eq!(moves0, 0, "no resize yet");
        m.acct.pending_rehash_cycles = 0;
        m.with(|env| t.resize_all(env, true)).unwrap();
        for w in 0..3 {
            m.with(|env| t.drain(env, w)).unwrap();
        }
        m.with(|env| t.settle(env)).unwrap();
        let ecpt_moved = t.stats.rehash_entries_moved;
        let ecpt_cuckoos = t.stats.cuckoo_reinsertions - cuckoo0;
        // Every entry read at a rehashing pointer moves (out of place). That is each of the N
        // entries, plus those a cuckoo eviction had pushed into a way's not yet migrated part,
        // which move again when the pointer reaches them.
        assert_eq!(ecpt_moved, t.stats.upsize_entries_rehashed);
        assert!(
            ecpt_moved >= n as u64,
            "ECPT moves every entry: {ecpt_moved}"
        );
        assert!(ecpt_moved <= n as u64 + ecpt_cuckoos);
        assert_eq!(
            m.acct.pending_rehash_cycles,
            (ecpt_moved + ecpt_cuckoos) * 250
        );
        assert_eq!(t.audit(&m.store, &m.l2p).map(|l| l.len()), Ok(n));

        // ME-HPT: one way upsizes in place; the moved entries are those whose extra bit is 1.
        let mut m = Mem::new();
        let mut t = new_table(&mut m, params(HashKind::Crc, 1024));
        map_clusters(&mut m, &mut t, &cs);
        let before = live_lines(&m, &t, 0);
        let old = t.ways[0].gen;
        let expect: u64 = before
            .iter()
            .map(|&(_, c)| (old.hash.hash(c) >> old.bits) & 1)
            .sum();
        m.acct.pending_rehash_cycles = 0;
        m.with(|env| t.start_resize(env, 0, true)).unwrap();
        m.with(|env| t.drain(env, 0)).unwrap();
        assert_eq!(t.stats.rehash_entries_moved, expect);
        assert_eq!(m.acct.pending_rehash_cycles, expect * 250);
        let frac = expect as f64 / n as f64;
        assert!(
            (0.1..=0.25).contains(&frac),
            "about half of one way of three: {frac}"
        );
        assert_eq!(t.audit(&m.store, &m.l2p).map(|l| l.len()), Ok(n));
    }

    #[test]
    fn in_place_downsize_merges_halves_cuckooing_collisions() {
        let mut m = Mem::new();
        let mut t = new_table(&mut m, params(HashKind::Crc, 1024));
        let cs = clusters(1200, 5);
        map_clusters(&mut m, &mut t, &cs);
        let bytes_before = t.ways[0].bytes();
        let occ0 = t.ways[0].occupancy;
        m.with(|env| t.start_resize(env, 0, false)).unwrap();
        m.with(|env| t.drain(env, 0)).unwrap();
        m.with(|env| t.settle(env)).unwrap();
        assert_eq!(t.ways[0].bytes(), bytes_before / 2, "upper chunks freed");
        assert!(t.ways[0].occupancy < occ0, "collisions went to other ways");
        assert_eq!(t.audit(&m.store, &m.l2p).map(|l| l.len()), Ok(1200));
        for (i, &c) in cs.iter().enumerate() {
            assert_eq!(
                t.lookup(&m.store, &m.l2p, Vpn(c * 8)),
                Some(Pfn(i as u64 + 1))
            );
        }
    }

    #[test]
    fn out_of_place_lookup_splits_at_the_rehash_pointer() {
        let mut m = Mem::new();
        let mut p = params(HashKind::Crc, 256);
        p.policy = Policy::ECPT;
        p.name = "ECPT";
        let mut t = new_table(&mut m, p);
        let cs = clusters(300, 6);
        map_clusters(&mut m, &mut t, &cs);
        m.with(|env| t.resize_all(env, true)).unwrap();
        for w in 0..3 {
            for _ in 0..40 {
                m.with(|env| t.rehash_step(env, w)).unwrap();
            }
        }
        m.with(|env| t.settle(env)).unwrap();
        // Mid-migration: every line is where the P_i comparison sends the lookup, and both
        // tables are probed depending on the key.
        assert_eq!(t.audit(&m.store, &m.l2p).map(|l| l.len()), Ok(300));
        let mut out = [ProbeLine::default(); 3];
        let (mut old, mut new) = (0, 0);
        for (i, &c) in cs.iter().enumerate() {
            assert_eq!(
                t.lookup(&m.store, &m.l2p, Vpn(c * 8)),
                Some(Pfn(i as u64 + 1))
            );
            t.probe(&m.store, &m.l2p, Vpn(c * 8), &mut out);
            for (w, o) in out.iter().enumerate() {
                let r = t.ways[w].resize.as_ref().unwrap();
                assert_eq!(o.old, r.old.key(c) >= r.pointer);
                if o.old {
                    old += 1
                } else {
                    new += 1
                }
            }
            assert_eq!(out.iter().filter(|o| o.hit).count(), 1);
        }
        assert!(old > 0 && new > 0);
        assert!(t
            .ways
            .iter()
            .all(|w| w.gen.hash != w.resize.as_ref().unwrap().old.hash));
        assert_eq!(
            t.bytes(),
            3 * (256 + 512) * 64,
            "old and new blocks coexist"
        );
        for w in 0..3 {
            m.with(|env| t.drain(env, w)).unwrap();
        }
        assert_eq!(t.bytes(), 3 * 512 * 64);
        assert_eq!(
            t.stats.upsize_entries_moved,
            t.stats.upsize_entries_rehashed
        );
    }

    #[test]
    fn weighted_insertion_follows_free_slots() {
        let mut m = Mem::new();
        let mut p = params(HashKind::City, 512);
        p.upsize = 0.6;
        p.downsize = 0.2;
        let mut t = new_table(&mut m, p);
        // Make way 0 larger than the others and fill ways unevenly by placing directly.
        m.with(|env| t.start_resize(env, 0, true)).unwrap();
        m.with(|env| t.drain(env, 0)).unwrap();
        // Put `c` into way `w` if its slot there is free.
        let put = |m: &mut Mem, t: &mut ElasticTable, c: u64, w: usize| {
            let (addr, _) = t.addr_of(&m.l2p, w, c);
            if Line::read(&m.store, addr).is_live() {
                return;
            }
            let mut line = Line::new(c);
            line.set_pte(0, Some(Pfn(1)));
            assert_eq!(
                m.with(|env| t.place_bounded(env, line, w, 0)).unwrap(),
                None
            );
        };
        let cs = clusters(700, 8);
        for (i, &c) in cs.iter().enumerate() {
            put(&mut m, &mut t, c, [0, 1, 1, 2, 2, 2, 2][i % 7]);
        }
        let weights = t.way_weights();
        let free: Vec<f64> = t
            .ways
            .iter()
            .map(|w| (w.lines() - w.occupancy) as f64)
            .collect();
        assert_eq!(weights, free, "no way is both larger and at the threshold");
        let sum: f64 = free.iter().sum();
        let n = 200_000;
        let mut hits = [0u32; 3];
        for _ in 0..n {
            hits[t.choose_way()] += 1;
        }
        for i in 0..3 {
            let f = hits[i] as f64 / n as f64;
            assert!(
                (f - free[i] / sum).abs() < 0.005,
                "way {i}: {f} vs {}",
                free[i] / sum
            );
        }
        // Fill the large way to the upsize threshold: its weight drops to zero.
        for &c in clusters(3000, 10).iter().filter(|c| !cs.contains(c)) {
            if t.ways[0].occupancy as f64 >= 0.6 * t.ways[0].lines() as f64 {
                break;
            }
            put(&mut m, &mut t, c, 0);
        }
        let w = t.way_weights();
        assert_eq!(w[0], 0.0);
        assert!(w[1] > 0.0 && w[2] > 0.0);
        assert!((0..10_000).all(|_| t.choose_way() != 0));
    }

    #[test]
    fn per_way_growth_keeps_ways_within_a_factor_of_two() {
        let mut m = Mem::new();
        let mut p = params(HashKind::Crc, 8);
        p.upsize = 0.6;
        p.downsize = 0.2;
        let mut t = new_table(&mut m, p);
        let mut uneven = false;
        for (i, c) in (0..20_000u64).enumerate() {
            m.with(|env| t.map(env, Vpn(c * 8), Pfn(i as u64 + 1)))
                .unwrap();
            let lines: Vec<u64> = t.ways.iter().map(Way::lines).collect();
            let (min, max) = (lines.iter().min().unwrap(), lines.iter().max().unwrap());
            assert!(max <= &(2 * min), "{lines:?}");
            uneven |= min != max;
        }
        assert!(uneven, "per-way resizing makes ways of different sizes");
        assert_eq!(t.audit(&m.store, &m.l2p).map(|l| l.len()), Ok(20_000));
        let net: Vec<i64> = (0..3)
            .map(|w| t.stats.upsizes[w] as i64 - t.stats.downsizes[w] as i64)
            .collect();
        assert!(
            net.iter().max().unwrap() - net.iter().min().unwrap() <= 1,
            "{net:?}"
        );
    }
}
