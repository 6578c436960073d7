//! One set-associative cache level with 64-byte lines, write-back and write-allocate.

use super::kind::{MemKind, KINDS};
use crate::assoc::Replacement;
use crate::assoc::SetAssoc;
use crate::config::{nonzero, pow2, ways, HostUses};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One cache level.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size: u64,
    pub ways: u32,
    /// Lookup latency in cycles, added for every access that reaches this level.
    pub latency: u32,
    pub replacement: Replacement,
    /// Miss-status holding registers (fill buffers): misses this level can have in flight.
    /// Only the L1D's are modelled, and it must give them (`cache.l1d.mshrs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mshrs: Option<u32>,
    /// How the cache is looked up (`cache.l1d.addressing`): by the physical address after
    /// translation (the default, left out of the resolved config), or by the virtual address
    /// before it, so that a hit needs no translation (SPARTA §4.3). Only an L1D may be virtual.
    #[serde(default, skip_serializing_if = "Addressing::is_physical")]
    pub addressing: Addressing,
}

/// How a cache is looked up: `cache.l1d.addressing`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Addressing {
    /// By physical address: every access is translated first.
    #[default]
    Physical,
    /// By virtual address, with the address space in the tag: a hit needs no translation;
    /// a miss is translated on its way to memory (docs/concepts.md, "virtual caches").
    Virtual,
}

impl Addressing {
    pub fn is_physical(&self) -> bool {
        *self == Addressing::Physical
    }
}

impl CacheConfig {
    pub fn sets(&self) -> u64 {
        self.size / crate::addr::LINE_BYTES / self.ways as u64
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        ways(format!("{path}.ways"), self.ways as u64)?;
        nonzero(format!("{path}.latency"), self.latency as u64)?;
        let line_sets = self.size / crate::addr::LINE_BYTES;
        if !self
            .size
            .is_multiple_of(crate::addr::LINE_BYTES * self.ways as u64)
            || line_sets == 0
        {
            return Err(Error::config(
                format!("{path}.size"),
                format!(
                    "{} bytes is not a whole number of {}-way sets of 64-byte lines",
                    self.size, self.ways
                ),
            ));
        }
        pow2(
            format!("{path}.size"),
            "size / (64 * ways) (the set count)",
            self.sets(),
        )
    }

    /// Count `copies` caches of this size (set at `path`): a slot per 64-byte line.
    fn host_use(&self, path: &str, copies: (u64, &'static str), uses: &mut HostUses) {
        let lines = self.size / crate::addr::LINE_BYTES;
        uses.add(
            format!("{path}.size"),
            lines,
            "lines",
            Cache::SLOT_BYTES,
            copies,
        );
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheHierarchyConfig {
    pub l1d: CacheConfig,
    pub l2: CacheConfig,
    pub llc: CacheConfig,
}

impl CacheHierarchyConfig {
    /// The private caches of each core and the shared LLC.
    pub fn host_uses(&self, uses: &mut HostUses) {
        let per_core = (uses.cores(), "one per core");
        self.l1d.host_use("cache.l1d", per_core, uses);
        self.l2.host_use("cache.l2", per_core, uses);
        self.llc.host_use("cache.llc", (1, ""), uses);
    }
}

impl crate::config::Validate for CacheHierarchyConfig {
    fn validate(&self) -> Result<()> {
        self.l1d.validate("cache.l1d")?;
        self.l2.validate("cache.l2")?;
        self.llc.validate("cache.llc")?;
        for (path, c) in [
            ("cache.l2.addressing", &self.l2),
            ("cache.llc.addressing", &self.llc),
        ] {
            if !c.addressing.is_physical() {
                return Err(Error::config(
                    path,
                    "only the L1D may be virtually addressed (cache.l1d.addressing): the \
                     levels below it are reached after translation",
                ));
            }
        }
        // A virtual L1D is modelled by the physical line its virtual line maps to (see
        // `Cache::probe_hit`): the two pick the same set only if the set index lies in the
        // page offset.
        if !self.l1d.addressing.is_physical()
            && self.l1d.sets() * crate::addr::LINE_BYTES > 1 << crate::addr::BASE_PAGE_SHIFT
        {
            return Err(Error::config(
                "cache.l1d.addressing",
                format!(
                    "a virtual L1D must index its sets within the 4 KiB page offset (sets x 64 \
                     bytes <= 4096), got {} sets of cache.l1d.size = {} bytes, {} ways",
                    self.l1d.sets(),
                    self.l1d.size,
                    self.l1d.ways
                ),
            ));
        }
        match self.l1d.mshrs {
            None => {
                return Err(Error::config(
                    "cache.l1d.mshrs",
                    "missing: the L1D's miss-status registers (fill buffers) bound the misses \
                     in flight",
                ))
            }
            Some(n) => nonzero("cache.l1d.mshrs".into(), n as u64)?,
        }
        for (path, c) in [("cache.l2.mshrs", &self.l2), ("cache.llc.mshrs", &self.llc)] {
            if c.mshrs.is_some() {
                return Err(Error::config(
                    path,
                    "only the L1D's MSHRs are modelled (cache.l1d.mshrs)",
                ));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Block {
    kind: MemKind,
    dirty: bool,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HitMiss {
    pub hits: u64,
    pub misses: u64,
}

#[derive(Clone, Debug, Default)]
pub struct CacheStats {
    pub by_kind: [HitMiss; KINDS],
    pub writebacks: u64,
}

/// What [`Cache::access`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// Missed; the line is now filled, and the victim (if any) was clean.
    Miss,
    /// Missed, and the fill evicted this dirty line: it must be written back below.
    MissEvictedDirty(u64),
}

pub struct Cache {
    array: SetAssoc<Block>,
    latency: u64,
    stats: CacheStats,
    /// Lines recent searches found, with the slots they were in (`NO_LINE` where none): a few
    /// streams taking turns (a triad's three arrays, whose lines share a set) find their line
    /// here without searching the set, if it is still in that slot.
    recent: [(u64, usize); RECENT],
    /// The entry of `recent` the next line found replaces.
    recent_next: usize,
}

/// Lines remembered per cache.
const RECENT: usize = 4;
/// No line: line numbers are addresses >> 6, never this.
const NO_LINE: u64 = u64::MAX;

impl Cache {
    /// Host bytes of one line's slot (config host-memory checks).
    pub const SLOT_BYTES: u64 = SetAssoc::<Block>::SLOT_BYTES;

    pub fn new(cfg: &CacheConfig) -> Cache {
        Cache {
            array: SetAssoc::new(cfg.sets() as usize, cfg.ways as usize, cfg.replacement),
            latency: cfg.latency as u64,
            stats: CacheStats::default(),
            recent: [(NO_LINE, 0); RECENT],
            recent_next: 0,
        }
    }

    pub fn latency(&self) -> u64 {
        self.latency
    }

    /// Hint the host to cache the set `line` maps to: a write-back of `line` will search it
    /// soon ([`Cache::absorb_writeback`]). Simulated state is not touched.
    #[inline(always)]
    pub fn prefetch_set(&self, line: u64) {
        use super::prefetch_host;
        // A set spans a host line or two of tags and of values: its first and last slots.
        let (tags, values) = self.array.set_slots(self.array.set_of(line));
        prefetch_host(&tags[0]);
        prefetch_host(&tags[tags.len() - 1]);
        prefetch_host(&values[0]);
        prefetch_host(&values[values.len() - 1]);
    }

    /// Access the line `line` (address >> 6), searching its set. A miss allocates the line
    /// (the caller fetches it from below) and may evict a dirty victim, which the caller writes
    /// back. [`Cache::access_recent`] answers the lines it knows without the search.
    #[inline]
    pub fn access(&mut self, line: u64, kind: MemKind, write: bool) -> Lookup {
        let set = self.array.set_of(line);
        let vacancy = match self.array.probe(set, line) {
            Ok(b) => {
                Self::hits(&mut self.stats, b, kind, write, 1);
                self.remember(line);
                return Lookup::Hit;
            }
            Err(vacancy) => vacancy,
        };
        self.stats.by_kind[kind.index()].misses += 1;
        match self.array.fill(vacancy, line, Block { kind, dirty: write }) {
            Some((victim_line, victim)) if victim.dirty => {
                self.stats.writebacks += 1;
                Lookup::MissEvictedDirty(victim_line)
            }
            _ => Lookup::Miss,
        }
    }

    /// [`Cache::access`] if the cache holds `line` (a hit, counted as `access` counts it);
    /// otherwise nothing is changed or counted and it returns false. A virtual L1D's lookup
    /// before translation: only a miss goes on to be translated, and then to
    /// [`Cache::access`], which counts the miss.
    #[inline]
    pub fn probe_hit(&mut self, line: u64, kind: MemKind, write: bool) -> bool {
        if self.access_recent(line, kind, write) {
            return true;
        }
        let set = self.array.set_of(line);
        match self.array.probe(set, line) {
            Ok(b) => {
                Self::hits(&mut self.stats, b, kind, write, 1);
                self.remember(line);
                true
            }
            Err(_) => false,
        }
    }

    /// Put `line`, which memory sent without this cache being searched for it, into the
    /// cache: counted as a miss (the access was served from below). If the cache held the
    /// line already, its copy stays (made dirty by a write). Returns the dirty victim the
    /// fill evicted, which the caller writes back.
    pub fn install(&mut self, line: u64, kind: MemKind, write: bool) -> Option<u64> {
        self.stats.by_kind[kind.index()].misses += 1;
        let set = self.array.set_of(line);
        let vacancy = match self.array.probe(set, line) {
            Ok(b) => {
                b.dirty |= write;
                b.kind = kind;
                return None;
            }
            Err(vacancy) => vacancy,
        };
        match self.array.fill(vacancy, line, Block { kind, dirty: write }) {
            Some((victim_line, victim)) if victim.dirty => {
                self.stats.writebacks += 1;
                Some(victim_line)
            }
            _ => None,
        }
    }

    /// A dirty line written back from the level above: if this cache holds `line`, it is now
    /// dirty here and the write-back ends (returns true); otherwise it goes further down. A
    /// write-back allocates nothing and is not a use of the line (no hit, no replacement
    /// update).
    pub fn absorb_writeback(&mut self, line: u64) -> bool {
        let set = self.array.set_of(line);
        match self.array.peek_mut(set, line) {
            Some(b) => {
                b.dirty = true;
                true
            }
            None => false,
        }
    }

    /// [`Cache::access`] if `line` is one a recent access found: such a hit needs no search.
    /// Returns whether it was; if not, nothing has changed.
    #[inline(always)]
    pub fn access_recent(&mut self, line: u64, kind: MemKind, write: bool) -> bool {
        let set = self.array.set_of(line);
        // The line of the last access (the next word of one stream) first: one compare, and
        // no replacement update.
        let b = match self.array.recent(set, line) {
            Some(b) => b,
            None => {
                let Some(&(_, slot)) = self.recent.iter().find(|&&(l, _)| l == line) else {
                    return false;
                };
                match self.array.hit_at(set, line, slot) {
                    Some(b) => b,
                    None => return false,
                }
            }
        };
        Self::hits(&mut self.stats, b, kind, write, 1);
        true
    }

    /// A search just found `line`. (A line just filled is not remembered: the next access to
    /// it is mostly the next one, which finds it as the last access's line.)
    #[inline(always)]
    fn remember(&mut self, line: u64) {
        if let Some(slot) = self.array.last_slot() {
            self.recent[self.recent_next] = (line, slot);
            self.recent_next = (self.recent_next + 1) % RECENT;
        }
    }

    /// `n` more hits on `line`, the line the last access found, as `n` calls of
    /// [`Cache::access_recent`] would count them (a write if any of them writes). Returns
    /// false, having done nothing, if the last access found another line.
    #[inline(always)]
    pub fn rehit(&mut self, line: u64, kind: MemKind, write: bool, n: u64) -> bool {
        let set = self.array.set_of(line);
        match self.array.recent(set, line) {
            Some(b) => {
                Self::hits(&mut self.stats, b, kind, write, n);
                true
            }
            None => false,
        }
    }

    #[inline(always)]
    fn hits(stats: &mut CacheStats, b: &mut Block, kind: MemKind, write: bool, n: u64) {
        b.dirty |= write;
        // A line re-used by another kind (e.g. a PT page freed and reused for data) is
        // re-tagged, so occupancy reflects current contents.
        b.kind = kind;
        stats.by_kind[kind.index()].hits += n;
    }

    pub fn stats(&self) -> &CacheStats {
        &self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = CacheStats::default();
    }

    /// Valid blocks per kind right now (Utopia Fig 3: how much of a cache holds PTEs).
    pub fn occupancy(&self) -> [u64; KINDS] {
        let mut occ = [0; KINDS];
        for (_, b) in self.array.entries() {
            occ[b.kind.index()] += 1;
        }
        occ
    }

    /// Fraction of this cache's capacity holding translation metadata right now.
    pub fn translation_fraction(&self) -> f64 {
        Self::translation_share(&self.occupancy(), self.capacity_blocks())
    }

    fn translation_share(occupancy: &[u64; KINDS], capacity_blocks: u64) -> f64 {
        // Kind 0 is data; every other kind is translation metadata.
        occupancy[1..].iter().sum::<u64>() as f64 / capacity_blocks as f64
    }

    pub fn capacity_blocks(&self) -> u64 {
        (self.array.sets() * self.array.ways()) as u64
    }

    pub fn snapshot(&self) -> CacheSnapshot {
        Cache::combined([self])
    }

    /// The stats of several caches of one level as one (the private caches of all cores):
    /// counts and blocks add up, the translation fraction is over their whole capacity.
    pub fn combined<'a>(caches: impl IntoIterator<Item = &'a Cache>) -> CacheSnapshot {
        let mut occ = [0; KINDS];
        let mut stats = CacheStats::default();
        let mut capacity = 0;
        for c in caches {
            for (o, n) in occ.iter_mut().zip(c.occupancy()) {
                *o += n;
            }
            for (h, n) in stats.by_kind.iter_mut().zip(&c.stats.by_kind) {
                h.hits += n.hits;
                h.misses += n.misses;
            }
            stats.writebacks += c.stats.writebacks;
            capacity += c.capacity_blocks();
        }
        let mut by_kind = BTreeMap::new();
        let mut occupancy = BTreeMap::new();
        for k in MemKind::all() {
            let hm = stats.by_kind[k.index()];
            if hm.hits + hm.misses > 0 {
                by_kind.insert(k.name(), hm);
            }
            if occ[k.index()] > 0 {
                occupancy.insert(k.name(), occ[k.index()]);
            }
        }
        let hits: u64 = stats.by_kind.iter().map(|h| h.hits).sum();
        let misses: u64 = stats.by_kind.iter().map(|h| h.misses).sum();
        CacheSnapshot {
            hits,
            misses,
            writebacks: stats.writebacks,
            by_kind,
            occupancy,
            translation_fraction: Self::translation_share(&occ, capacity),
        }
    }
}

/// The stats subtree of one cache level.
#[derive(Clone, Debug, Serialize)]
pub struct CacheSnapshot {
    pub hits: u64,
    pub misses: u64,
    pub writebacks: u64,
    pub by_kind: BTreeMap<&'static str, HitMiss>,
    /// Valid blocks per kind at the end of the run.
    pub occupancy: BTreeMap<&'static str, u64>,
    /// Fraction of the cache's blocks holding translation metadata at the end of the run.
    pub translation_fraction: f64,
}
