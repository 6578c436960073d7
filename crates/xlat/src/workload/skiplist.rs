//! `skiplist`: Pugh's skip list as in ASCYLIB (SPARTA §7, "Skip Lists"). Each node has
//! a tower of `level` next pointers, `level` geometric with p = 1/2 up to `max_level` =
//! ceil(log2(universe)). A search starts at the head's top level and moves right while the next
//! node's key is smaller, then down: every next-pointer load and every key load depends on the
//! pointer load that led to its node. Nodes are allocated with their tower (24 + 8 * level bytes)
//! from one region; freed nodes are reused by towers of the same height.

use super::emit::{Emitter, RecId, SimHeap, Stop, ThreadedSource};
use super::index::{
    self, load_after, store_after, IndexConfig, IndexStructure, KeySpace, Permutation, NIL,
};
use crate::addr::VirtAddr;
use crate::error::Result;
use crate::os::{AddressSpaces, MapKind};
use crate::rng::Rng;

/// Node layout: key, value, level (8 bytes each), then `level` next pointers. On the host a node
/// is `3 + level` u32 words (key low, key high, level, next ids), exactly half its simulated
/// size, so host word `w` is simulated byte `8 * w` of the region.
const HEADER_WORDS: u32 = 3;
const KEY: u64 = 0;
const VALUE: u64 = 8;
const LEVEL: u64 = 16;

fn max_level(universe: u64) -> u32 {
    (64 - universe.saturating_sub(1).leading_zeros()).clamp(1, 32)
}

/// Words the region must hold for `keys` towers: the expected tower height is below 2, so 6
/// words per key leaves room for random variation and for per-height free lists.
fn region_words(keys: u64, levels: u32) -> u64 {
    u64::from(HEADER_WORDS + levels) + 6 * keys + 1024
}

pub fn build(
    cfg: &IndexConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let mix = cfg.mix();
    let levels = max_level(2 * cfg.keys);
    let words = region_words(mix.max_keys(), levels);
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    // Towers are allocated one by one: small `malloc`s, one after the other on the brk heap.
    let region = heap.objects(os, (8 * words).div_ceil(64), 64)?.base;
    Ok(index::spawn_team(
        pid,
        cfg.references,
        mix,
        seed,
        cfg.threads,
        move |keys, rng| SkipList::build(region, words, keys, rng),
    ))
}

#[derive(Clone, Debug)]
pub(crate) struct SkipList {
    region: VirtAddr,
    capacity_words: u64,
    /// The node arena; the head tower is node 0.
    words: Vec<u32>,
    levels: u32,
    level_salt: u64,
    /// Freed nodes by tower height.
    free: Vec<Vec<u32>>,
    /// Scratch: the last node before the key at each level, and the load that produced it.
    preds: Vec<(u32, Option<RecId>)>,
}

impl SkipList {
    pub fn build(
        region: VirtAddr,
        capacity_words: u64,
        keys: &KeySpace,
        rng: &mut Rng,
    ) -> SkipList {
        let levels = max_level(keys.universe());
        let mut s = SkipList {
            region,
            capacity_words,
            words: Vec::new(),
            levels,
            level_salt: rng.next_u64(),
            free: vec![Vec::new(); levels as usize + 1],
            preds: vec![(0, None); levels as usize],
        };
        let head = s.alloc(levels).expect("the region holds the head");
        s.set_key(head, 0);
        // Nodes are allocated in random insertion order (so list neighbours are far apart in
        // memory, as after real inserts), then linked in key order keeping the last node of each
        // level: the same list random insertion builds (towers depend only on the key), without a
        // search per key.
        let mut last = vec![head; levels as usize];
        let order = Permutation::new(keys.n, rng);
        let mut nodes = vec![0u32; keys.n as usize];
        for i in 0..keys.n {
            let k = keys.initial(order.apply(i));
            let n = s
                .alloc(s.level_of(k))
                .expect("the region holds every start key");
            s.set_key(n, k);
            nodes[(k / 2) as usize] = n;
        }
        for n in nodes {
            for l in 0..s.level(n) {
                s.set_next(last[l as usize], l, n);
                last[l as usize] = n;
            }
        }
        s
    }

    /// Tower height of `key`: geometric with p = 1/2 from a hash, so it does not depend on
    /// when the key is inserted.
    fn level_of(&self, key: u64) -> u32 {
        (index::mix64(key ^ self.level_salt).trailing_ones() + 1).min(self.levels)
    }

    fn alloc(&mut self, level: u32) -> std::result::Result<u32, Stop> {
        if let Some(n) = self.free[level as usize].pop() {
            return Ok(n);
        }
        let n = self.words.len() as u32;
        if n as u64 + u64::from(HEADER_WORDS + level) > self.capacity_words {
            return Err(Stop);
        }
        self.words.extend([0, 0, level]);
        self.words.extend(std::iter::repeat_n(NIL, level as usize));
        Ok(n)
    }

    fn key(&self, n: u32) -> u64 {
        u64::from(self.words[n as usize]) | u64::from(self.words[n as usize + 1]) << 32
    }
    fn set_key(&mut self, n: u32, key: u64) {
        self.words[n as usize] = key as u32;
        self.words[n as usize + 1] = (key >> 32) as u32;
    }
    fn level(&self, n: u32) -> u32 {
        self.words[n as usize + 2]
    }
    fn next(&self, n: u32, l: u32) -> u32 {
        self.words[(n + HEADER_WORDS + l) as usize]
    }
    fn set_next(&mut self, n: u32, l: u32, to: u32) {
        self.words[(n + HEADER_WORDS + l) as usize] = to;
    }
    fn addr(&self, n: u32, offset: u64) -> VirtAddr {
        VirtAddr(self.region.0 + 8 * u64::from(n) + offset)
    }
    fn next_addr(&self, n: u32, l: u32) -> VirtAddr {
        self.addr(n, 8 * u64::from(HEADER_WORDS + l))
    }

    /// Pugh's search: fills `preds` and returns the first node with a key >= `key` at level 0
    /// (or `NIL`) with the load of the pointer to it.
    fn search(
        &mut self,
        e: &mut Emitter,
        key: u64,
    ) -> std::result::Result<(u32, Option<RecId>), Stop> {
        let mut preds = std::mem::take(&mut self.preds);
        let found = self.search_into(e, key, &mut preds);
        self.preds = preds;
        found
    }

    /// [`SkipList::search`] writing the predecessors into `preds` (one per level), reading
    /// nothing else of `self` mutably: what a lookup shared by several threads runs.
    fn search_into(
        &self,
        e: &mut Emitter,
        key: u64,
        preds: &mut [(u32, Option<RecId>)],
    ) -> std::result::Result<(u32, Option<RecId>), Stop> {
        let (mut x, mut xrec) = (0u32, None);
        let mut found = (NIL, None);
        for l in (0..self.levels).rev() {
            loop {
                let nrec = load_after(e, self.next_addr(x, l), xrec)?;
                let nxt = self.next(x, l);
                found = (nxt, Some(nrec));
                if nxt == NIL {
                    break;
                }
                e.load_dep(self.addr(nxt, KEY), 8, nrec)?;
                e.instr(2);
                if self.key(nxt) >= key {
                    break;
                }
                (x, xrec) = (nxt, Some(nrec));
            }
            preds[l as usize] = (x, xrec);
        }
        Ok(found)
    }
}

impl index::SharedLookup for SkipList {
    fn lookup_shared(&self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        // A lookup needs no predecessors: a scratch array on the stack (levels <= 64).
        let mut preds = [(0u32, None); 64];
        let (n, rec) = self.search_into(e, key, &mut preds[..self.levels as usize])?;
        if n == NIL || self.key(n) != key {
            return Ok(false);
        }
        load_after(e, self.addr(n, VALUE), rec)?;
        Ok(true)
    }
}

impl IndexStructure for SkipList {
    fn lookup(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let (n, rec) = self.search(e, key)?;
        if n == NIL || self.key(n) != key {
            return Ok(false);
        }
        load_after(e, self.addr(n, VALUE), rec)?;
        Ok(true)
    }

    fn insert(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let (n, _) = self.search(e, key)?;
        if n != NIL && self.key(n) == key {
            return Ok(false);
        }
        let level = self.level_of(key);
        let node = self.alloc(level)?;
        self.set_key(node, key);
        e.instr(6);
        for field in [KEY, VALUE, LEVEL] {
            e.store(self.addr(node, field), 8)?;
        }
        for l in 0..level {
            let (pred, prec) = self.preds[l as usize];
            self.set_next(node, l, self.next(pred, l));
            self.set_next(pred, l, node);
            e.store(self.next_addr(node, l), 8)?;
            store_after(e, self.next_addr(pred, l), prec)?;
        }
        Ok(true)
    }

    fn remove(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let (n, rec) = self.search(e, key)?;
        if n == NIL || self.key(n) != key {
            return Ok(false);
        }
        let level = self.level(n);
        load_after(e, self.addr(n, LEVEL), rec)?;
        for l in 0..level {
            // Below its height the node follows the level's predecessor (it is the first key
            // >= `key` on every level it is on).
            let (pred, prec) = self.preds[l as usize];
            debug_assert_eq!(self.next(pred, l), n);
            load_after(e, self.next_addr(n, l), rec)?;
            self.set_next(pred, l, self.next(n, l));
            store_after(e, self.next_addr(pred, l), prec)?;
        }
        self.free[level as usize].push(n);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;
    use crate::workload::testutil::{self, addrs};

    fn tiny(keys: u64, max_keys: u64) -> (SkipList, KeySpace) {
        let mut rng = Rng::new(7, WORKLOAD);
        let ks = KeySpace::new(keys, &mut rng);
        let levels = max_level(ks.universe());
        let region = VirtAddr(0x10_0000);
        let s = SkipList::build(region, region_words(max_keys, levels), &ks, &mut rng);
        (s, ks)
    }

    /// Reference search: from the head's top level, right while the next key is smaller, down
    /// otherwise; records the next-pointer and key addresses it reads, and the value on a hit.
    fn reference_lookup(s: &SkipList, key: u64) -> Vec<u64> {
        let base = s.region.0;
        let mut out = Vec::new();
        let mut x = 0u32;
        for l in (0..s.levels).rev() {
            loop {
                out.push(base + 8 * (x as u64 + 3 + l as u64));
                let nxt = s.next(x, l);
                if nxt == NIL {
                    break;
                }
                out.push(base + 8 * nxt as u64);
                if s.key(nxt) >= key {
                    if l == 0 && s.key(nxt) == key {
                        out.push(base + 8 * nxt as u64 + 8);
                    }
                    break;
                }
                x = nxt;
            }
        }
        out
    }

    #[test]
    fn levels_are_sorted_lists_with_geometric_towers() {
        let (s, ks) = tiny(4000, 4000);
        for l in 0..s.levels {
            let mut keys = Vec::new();
            let mut n = s.next(0, l);
            while n != NIL {
                keys.push(s.key(n));
                n = s.next(n, l);
            }
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            if l == 0 {
                assert_eq!(keys, (0..ks.n).map(|i| ks.initial(i)).collect::<Vec<_>>());
            }
            if l == 1 {
                assert!((1700..2300).contains(&keys.len()), "{}", keys.len());
            }
        }
    }

    #[test]
    fn lookup_reads_exactly_the_search_path() {
        let (s, ks) = tiny(300, 300);
        for key in (0..ks.universe()).step_by(7) {
            let mut ss = s.clone();
            let recs = testutil::run(move |e| ss.lookup(e, key).map(|_| ()));
            assert_eq!(addrs(&recs), reference_lookup(&s, key), "key {key}");
            // The head is a global: only its loads are independent.
            let head_end = s.region.0 + 8 * (3 + s.levels as u64);
            for r in &recs {
                assert_eq!(r.dep == 0, r.vaddr.0 < head_end, "{r:?}");
            }
        }
    }

    #[test]
    fn updates_keep_the_list_valid() {
        let (s, ks) = tiny(300, 600);
        let initial = (0..ks.n).map(|i| ks.initial(i)).collect();
        testutil::check_against_set(s, initial, ks.universe(), 4000, 2);
    }

    #[test]
    fn same_seed_same_stream_and_large_default_footprint() {
        let cfg = IndexConfig {
            keys: 3000,
            update_ratio: 0.2,
            zipf_alpha: 0.0,
            references: 40_000,
            populate: true,
            threads: 1,
        };
        let stream = |seed| {
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            testutil::stream_hash(&testutil::drain_owned(
                build(&cfg, &mut os, pid, seed).unwrap(),
            ))
        };
        assert_eq!(stream(3), stream(3));
        assert_ne!(stream(3), stream(4));

        let c: IndexConfig = toml::from_str("populate = false").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        drop(build(&c, &mut os, pid, 1).unwrap());
        assert!(testutil::footprint(&os, pid) > 128 << 20);
    }
}
