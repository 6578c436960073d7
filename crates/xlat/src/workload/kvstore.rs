//! A memcached-like key-value store under a get/set request mix, the key-value workload of
//! Mosaic pages and SPARTA.
//!
//! Memory is organised as memcached organises it: a slab allocator whose size classes grow by a
//! factor of 1.25 from 64 bytes, 1 MiB slab pages carved into equal chunks of their class, every
//! item (48-byte header with LRU `next`/`prev` and hash-chain `h_next` pointers, then key, then
//! value) in one chunk; a chained hash index of `buckets` pointers; and one LRU list per class.
//! Slab memory is preallocated for the configured items (memcached `-L`), the store is loaded
//! with every key before the measured phase, then clients issue gets and sets of Zipf-popular
//! keys (YCSB-style skew).
//!
//! A get hashes the key, loads the bucket, walks the chain (each item's key compared, each
//! `h_next` followed: dependent loads) and reads the value. A set does the same lookup, writes
//! the new value in place, and moves the item to the head of its class's LRU list.

use super::dist::{mix64, Scatter, Zipf};
use super::emit::{Array, Emitter, RecId, SimHeap, Stop, ThreadedSource};
use super::lines::line_pieces;
use super::nonzero;
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvConfig {
    /// Items in the store.
    #[serde(default = "default_keys")]
    pub keys: u64,
    /// Key length in bytes (memcached allows up to 250).
    #[serde(default = "default_key_bytes")]
    pub key_bytes: u64,
    /// Smallest value in bytes; values are uniform in `value_min..=value_max` (equal: fixed).
    #[serde(default = "default_value_min")]
    pub value_min: u64,
    #[serde(default = "default_value_max")]
    pub value_max: u64,
    /// Zipf exponent of key popularity (YCSB's zipfian uses 0.99).
    #[serde(default = "default_alpha")]
    pub zipf_alpha: f64,
    /// Fraction of requests that are gets; the rest are sets.
    #[serde(default = "default_get_ratio")]
    pub get_ratio: f64,
    /// Hash buckets (a power of two); 0 picks memcached's sizing, the smallest power of two
    /// holding the items at 1.5 per bucket (its expansion threshold).
    #[serde(default)]
    pub buckets: u64,
    /// Memory references to emit.
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the slab memory and the index before the first reference (the load phase touches
    /// all of it).
    #[serde(default = "default_populate")]
    pub populate: bool,
}

fn default_keys() -> u64 {
    4 << 20
}
fn default_key_bytes() -> u64 {
    16
}
fn default_value_min() -> u64 {
    64
}
fn default_value_max() -> u64 {
    512
}
fn default_alpha() -> f64 {
    0.99
}
fn default_get_ratio() -> f64 {
    0.9
}
fn default_refs() -> u64 {
    20_000_000
}
fn default_populate() -> bool {
    true
}

/// memcached's item header (LRU links, chain link, times, sizes, flags, CAS).
const HEADER: u64 = 48;
const OFF_NEXT: u64 = 0;
const OFF_PREV: u64 = 8;
const OFF_H_NEXT: u64 = 16;
const OFF_TIME: u64 = 24;
const OFF_NKEY: u64 = 40;
/// Slab page size, also memcached's largest item.
const SLAB_PAGE: u64 = 1 << 20;
const SMALLEST_CHUNK: u64 = 64;
const GROWTH: f64 = 1.25;
const MAX_KEY_BYTES: u64 = 250;
/// "No item" in the host-side links.
const NONE: u32 = u32::MAX;

impl KvConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.keys == 0 || self.keys >= NONE as u64 {
            return Err(Error::config(
                format!("{path}.keys"),
                format!("must be between 1 and 2^32 - 2, got {}", self.keys),
            ));
        }
        if !(1..=MAX_KEY_BYTES).contains(&self.key_bytes) {
            return Err(Error::config(
                format!("{path}.key_bytes"),
                format!("must be between 1 and 250, got {}", self.key_bytes),
            ));
        }
        nonzero(format!("{path}.value_min"), self.value_min)?;
        if self.value_max < self.value_min || item_bytes(self.key_bytes, self.value_max) > SLAB_PAGE
        {
            return Err(Error::config(
                format!("{path}.value_max"),
                format!(
                    "must be at least value_min ({}) and fit a 1 MiB item, got {}",
                    self.value_min, self.value_max
                ),
            ));
        }
        if !(self.zipf_alpha.is_finite() && self.zipf_alpha >= 0.0) {
            return Err(Error::config(
                format!("{path}.zipf_alpha"),
                format!("must be a finite number >= 0, got {}", self.zipf_alpha),
            ));
        }
        if !(0.0..=1.0).contains(&self.get_ratio) {
            return Err(Error::config(
                format!("{path}.get_ratio"),
                format!("must be between 0 and 1, got {}", self.get_ratio),
            ));
        }
        if self.buckets != 0 && (!self.buckets.is_power_of_two() || self.buckets > 1 << 32) {
            return Err(Error::config(
                format!("{path}.buckets"),
                format!(
                    "must be 0 (automatic) or a power of two up to 2^32, got {}",
                    self.buckets
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }

    pub fn bucket_count(&self) -> u64 {
        if self.buckets == 0 {
            (self.keys * 2).div_ceil(3).next_power_of_two()
        } else {
            self.buckets
        }
    }

    /// Bytes of simulated memory: the slab pages (at each class's expected share of the items:
    /// a key's value size is a seeded draw, so a run's pages per class may differ by a few),
    /// the hash index, and the LRU heads and tails.
    pub fn footprint(&self) -> u64 {
        let page = |b: u64| b.div_ceil(4096) * 4096;
        let classes = slab_classes();
        let span = self.value_max - self.value_min + 1;
        let overhead = item_bytes(self.key_bytes, 0);
        let mut pages = 0;
        let mut smaller = 0u64;
        for &chunk in &classes {
            // Values whose item needs more than the class below and fits this one.
            let lo = (smaller + 1).saturating_sub(overhead).max(self.value_min);
            let hi = chunk.saturating_sub(overhead).min(self.value_max);
            let values = (hi + 1).saturating_sub(lo);
            let items = (self.keys as f64 * values as f64 / span as f64).ceil() as u64;
            pages += items.div_ceil(SLAB_PAGE / chunk);
            smaller = chunk;
        }
        pages.max(1) * SLAB_PAGE
            + page(8 * self.bucket_count())
            + 2 * page(8 * classes.len() as u64)
    }

    /// Host bytes of the store's links (per key: item address, class, chain and LRU links;
    /// per bucket: its chain's head).
    pub fn host_bytes(&self) -> u64 {
        21 * self.keys + 4 * self.bucket_count() + (1 << 20)
    }

    /// The store of one key.
    pub fn min_footprint(&self) -> u64 {
        self.with_keys(1).footprint()
    }

    fn with_keys(&self, keys: u64) -> KvConfig {
        KvConfig {
            keys,
            buckets: 0,
            ..self.clone()
        }
    }

    /// Set `keys` to the most whose store fits in `bytes` (buckets as memcached sizes them);
    /// `None` if one key does not fit.
    pub fn fit(&mut self, bytes: u64) -> Option<u64> {
        let keys = {
            let at = |keys| self.with_keys(keys).footprint();
            let hi = (bytes / item_bytes(self.key_bytes, self.value_min) + 2).min(NONE as u64);
            super::footprint::largest_fitting(1, hi, bytes, at)?
        };
        *self = self.with_keys(keys);
        Some(self.footprint())
    }
}

/// Bytes of an item: header, NUL-terminated key, value with its trailing "\r\n".
fn item_bytes(key_bytes: u64, value_bytes: u64) -> u64 {
    HEADER + key_bytes + 1 + value_bytes + 2
}

/// memcached's slab size classes: 64 bytes growing by 1.25 (8-byte aligned) up to a class of a
/// whole slab page.
pub fn slab_classes() -> Vec<u64> {
    let mut sizes = vec![SMALLEST_CHUNK];
    loop {
        let last = *sizes.last().expect("non-empty");
        let next = ((last as f64 * GROWTH) as u64).div_ceil(8) * 8;
        if next as f64 > SLAB_PAGE as f64 / GROWTH {
            sizes.push(SLAB_PAGE);
            return sizes;
        }
        sizes.push(next);
    }
}

/// The items' sizes and chunks: the slab memory carved for exactly the configured items.
pub struct Slabs {
    classes: Vec<u64>,
    /// Per class: first page (index into the slab region) and chunks in use.
    first_page: Vec<u64>,
    used: Vec<u64>,
    pages: u64,
    salt: u64,
    key_bytes: u64,
    value_min: u64,
    value_span: u64,
}

impl Slabs {
    /// Counts the items of every class (item sizes are a seeded function of the key).
    pub fn plan(cfg: &KvConfig, seed: u64) -> Slabs {
        let classes = slab_classes();
        let mut s = Slabs {
            used: vec![0; classes.len()],
            first_page: vec![0; classes.len()],
            classes,
            pages: 0,
            salt: Rng::new(seed, rng::stream::WORKLOAD).next_u64(),
            key_bytes: cfg.key_bytes,
            value_min: cfg.value_min,
            value_span: cfg.value_max - cfg.value_min + 1,
        };
        let mut count = vec![0u64; s.classes.len()];
        for key in 0..cfg.keys {
            count[s.class_of(key)] += 1;
        }
        for (c, &n) in count.iter().enumerate() {
            s.first_page[c] = s.pages;
            s.pages += n.div_ceil(SLAB_PAGE / s.classes[c]);
        }
        s
    }

    /// Bytes of slab memory (whole pages).
    pub fn bytes(&self) -> u64 {
        self.pages.max(1) * SLAB_PAGE
    }

    pub fn value_bytes(&self, key: u64) -> u64 {
        self.value_min + mix64(key ^ self.salt) % self.value_span
    }

    pub fn class_of(&self, key: u64) -> usize {
        let need = item_bytes(self.key_bytes, self.value_bytes(key));
        self.classes.partition_point(|&size| size < need)
    }

    #[cfg(test)]
    pub fn chunk_bytes(&self, class: usize) -> u64 {
        self.classes[class]
    }

    /// Take the next free chunk of `class`: its offset in the slab region.
    fn alloc(&mut self, class: usize) -> u64 {
        let per_page = SLAB_PAGE / self.classes[class];
        let j = self.used[class];
        self.used[class] += 1;
        (self.first_page[class] + j / per_page) * SLAB_PAGE + (j % per_page) * self.classes[class]
    }
}

/// Where the store lives in the simulated process.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub slabs: VirtAddr,
    /// The hash index: one item pointer per bucket.
    pub buckets: Array,
    /// Per class LRU head and tail pointers.
    pub lru_heads: Array,
    pub lru_tails: Array,
}

impl Layout {
    pub fn alloc(
        cfg: &KvConfig,
        slabs: &Slabs,
        os: &mut dyn AddressSpaces,
        pid: u16,
    ) -> Result<Layout> {
        let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
        let classes = slabs.classes.len() as u64;
        Ok(Layout {
            slabs: heap.alloc(os, slabs.bytes(), 4096)?,
            buckets: heap.array(os, cfg.bucket_count(), 8)?,
            lru_heads: heap.array(os, classes, 8)?,
            lru_tails: heap.array(os, classes, 8)?,
        })
    }
}

/// The host copy of the store's links (the simulated memory holds the same pointers).
pub struct Store {
    slabs: Slabs,
    bucket_mask: u64,
    hash_salt: u64,
    /// Per key: item address, class, chain and LRU links.
    addr: Vec<u64>,
    class: Vec<u8>,
    head: Vec<u32>,
    h_next: Vec<u32>,
    lru_next: Vec<u32>,
    lru_prev: Vec<u32>,
    lru_head: Vec<u32>,
    lru_tail: Vec<u32>,
}

impl Store {
    /// Load every key, in key order, as the benchmark's load phase does: each item goes into a
    /// fresh chunk of its class, to the head of its bucket's chain and of its class's LRU.
    pub fn load(cfg: &KvConfig, slabs: Slabs, slab_base: VirtAddr) -> Store {
        let n = cfg.keys as usize;
        let classes = slabs.classes.len();
        let mut s = Store {
            bucket_mask: cfg.bucket_count() - 1,
            hash_salt: slabs.salt.rotate_left(17),
            addr: Vec::with_capacity(n),
            class: Vec::with_capacity(n),
            head: vec![NONE; cfg.bucket_count() as usize],
            h_next: vec![NONE; n],
            lru_next: vec![NONE; n],
            lru_prev: vec![NONE; n],
            lru_head: vec![NONE; classes],
            lru_tail: vec![NONE; classes],
            slabs,
        };
        for key in 0..n as u32 {
            let c = s.slabs.class_of(key as u64);
            let offset = s.slabs.alloc(c);
            s.addr.push(slab_base.0 + offset);
            s.class.push(c as u8);
            let b = s.bucket_of(key as u64) as usize;
            s.h_next[key as usize] = s.head[b];
            s.head[b] = key;
            s.lru_push_head(key);
        }
        s
    }

    /// The bucket of `key` (memcached hashes the key bytes; keys are distinct strings named by
    /// their number, so the number stands for the bytes).
    pub fn bucket_of(&self, key: u64) -> u64 {
        mix64(key ^ self.hash_salt) & self.bucket_mask
    }

    #[cfg(test)]
    pub fn item_addr(&self, key: u32) -> VirtAddr {
        VirtAddr(self.addr[key as usize])
    }

    /// The keys of a bucket's chain, from the head.
    #[cfg(test)]
    pub fn chain(&self, bucket: u64) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.head[bucket as usize];
        while at != NONE {
            out.push(at);
            at = self.h_next[at as usize];
        }
        out
    }

    /// A class's LRU list, from the head (most recently used).
    #[cfg(test)]
    pub fn lru(&self, class: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.lru_head[class];
        while at != NONE {
            out.push(at);
            at = self.lru_next[at as usize];
        }
        out
    }

    fn value_span(&self, key: u32) -> (VirtAddr, u64) {
        let va = self.addr[key as usize] + HEADER + self.slabs.key_bytes + 1;
        (VirtAddr(va), self.slabs.value_bytes(key as u64) + 2)
    }

    fn lru_push_head(&mut self, key: u32) {
        let c = self.class[key as usize] as usize;
        let old = self.lru_head[c];
        self.lru_next[key as usize] = old;
        self.lru_prev[key as usize] = NONE;
        if old != NONE {
            self.lru_prev[old as usize] = key;
        } else {
            self.lru_tail[c] = key;
        }
        self.lru_head[c] = key;
    }

    fn lru_unlink(&mut self, key: u32) {
        let c = self.class[key as usize] as usize;
        let (p, n) = (self.lru_prev[key as usize], self.lru_next[key as usize]);
        if p != NONE {
            self.lru_next[p as usize] = n;
        } else {
            self.lru_head[c] = n;
        }
        if n != NONE {
            self.lru_prev[n as usize] = p;
        } else {
            self.lru_tail[c] = p;
        }
    }
}

/// The request stream: Zipf-popular keys (scattered over the key space) and the get/set choice.
pub struct Requests {
    zipf: Zipf,
    scatter: Scatter,
    get_ratio: f64,
    rng: Rng,
}

impl Requests {
    pub fn new(cfg: &KvConfig, seed: u64) -> Requests {
        // A sub-stream of its own, apart from the one that sized the items.
        let mut rng = Rng::new(seed, rng::stream::WORKLOAD ^ 0x6b76);
        Requests {
            zipf: Zipf::new(cfg.keys, cfg.zipf_alpha),
            scatter: Scatter::new(cfg.keys, &mut rng),
            get_ratio: cfg.get_ratio,
            rng,
        }
    }

    /// The next request: `(key, is_get)`.
    pub fn next(&mut self) -> (u32, bool) {
        let key = self.scatter.apply(self.zipf.sample(&mut self.rng)) as u32;
        (key, self.rng.unit() < self.get_ratio)
    }
}

/// Hash the key, load its bucket, walk the chain comparing keys until `key`. Returns the
/// record of the load that produced the item's pointer.
fn lookup(
    e: &mut Emitter,
    store: &Store,
    layout: &Layout,
    key: u32,
) -> std::result::Result<RecId, Stop> {
    let key_bytes = store.slabs.key_bytes;
    // Murmur3 over the key: a few instructions per 4 bytes, then the mask.
    e.instr(8 + key_bytes.div_ceil(4) as u32 * 3);
    let bucket = store.bucket_of(key as u64);
    let mut ptr = e.load(layout.buckets.at(bucket), 8)?;
    let mut at = store.head[bucket as usize];
    loop {
        let item = store.addr[at as usize];
        // Length check, then memcmp of the key.
        e.load_dep(VirtAddr(item + OFF_NKEY), 1, ptr)?;
        e.instr(2);
        for (va, bytes) in line_pieces(VirtAddr(item + HEADER), key_bytes) {
            e.load_dep(va, bytes, ptr)?;
            e.instr(2);
        }
        if at == key {
            return Ok(ptr);
        }
        ptr = e.load_dep(VirtAddr(item + OFF_H_NEXT), 8, ptr)?;
        at = store.h_next[at as usize];
    }
}

/// A set's LRU bump: unlink the item from its class list and push it at the head, writing the
/// neighbours' and the item's `prev`/`next` pointers and the list head (and tail when the item
/// was last).
fn lru_bump(
    e: &mut Emitter,
    store: &mut Store,
    layout: &Layout,
    key: u32,
    ptr: RecId,
) -> std::result::Result<(), Stop> {
    let k = key as usize;
    let c = store.class[k] as usize;
    if store.lru_head[c] == key {
        return Ok(());
    }
    let item = store.addr[k];
    let next_rec = e.load_dep(VirtAddr(item + OFF_NEXT), 8, ptr)?;
    let prev_rec = e.load_dep(VirtAddr(item + OFF_PREV), 8, ptr)?;
    let (p, n) = (store.lru_prev[k], store.lru_next[k]);
    e.instr(2);
    // Not the head, so it has a predecessor.
    e.store_dep(VirtAddr(store.addr[p as usize] + OFF_NEXT), 8, prev_rec)?;
    if n != NONE {
        e.store_dep(VirtAddr(store.addr[n as usize] + OFF_PREV), 8, next_rec)?;
    } else {
        e.store(layout.lru_tails.at(c as u64), 8)?;
    }
    let head_rec = e.load(layout.lru_heads.at(c as u64), 8)?;
    let old_head = store.lru_head[c];
    e.store_dep(
        VirtAddr(store.addr[old_head as usize] + OFF_PREV),
        8,
        head_rec,
    )?;
    e.store_dep(VirtAddr(item + OFF_NEXT), 8, ptr)?;
    e.store_dep(VirtAddr(item + OFF_PREV), 8, ptr)?;
    e.store(layout.lru_heads.at(c as u64), 8)?;
    store.lru_unlink(key);
    store.lru_push_head(key);
    Ok(())
}

/// Builds the key-value store in process `pid` and returns its record stream.
pub fn build(
    cfg: &KvConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let slabs = Slabs::plan(cfg, seed);
    let layout = Layout::alloc(cfg, &slabs, os, pid)?;
    let cfg = cfg.clone();
    Ok(ThreadedSource::spawn(
        pid,
        cfg.references,
        move |e: &mut Emitter| -> std::result::Result<(), Stop> {
            let mut store = Store::load(&cfg, slabs, layout.slabs);
            let mut requests = Requests::new(&cfg, seed);
            loop {
                let (key, is_get) = requests.next();
                // Request parsing and dispatch.
                e.instr(20);
                let ptr = lookup(e, &store, &layout, key)?;
                let (value, bytes) = store.value_span(key);
                if is_get {
                    // Copy the value into the response.
                    for (va, n) in line_pieces(value, bytes) {
                        e.load_dep(va, n, ptr)?;
                        e.instr(2);
                    }
                } else {
                    for (va, n) in line_pieces(value, bytes) {
                        e.store_dep(va, n, ptr)?;
                        e.instr(2);
                    }
                    let item = store.addr[key as usize];
                    e.store_dep(VirtAddr(item + OFF_TIME), 4, ptr)?;
                    lru_bump(e, &mut store, &layout, key, ptr)?;
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Op, Record};
    use crate::workload::testutil::{drain, small_os, stream_hash, vma_bytes};

    fn tiny() -> KvConfig {
        KvConfig {
            keys: 200,
            key_bytes: 16,
            value_min: 10,
            value_max: 300,
            zipf_alpha: 0.99,
            get_ratio: 0.7,
            buckets: 16, // chains of about a dozen items
            references: 30_000,
            populate: true,
        }
    }

    fn run(cfg: &KvConfig, seed: u64) -> (Vec<Record>, Layout, Store) {
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        let mut src = build(cfg, &mut os, pid, seed).unwrap();
        let mut fresh = small_os();
        let pid = fresh.spawn().unwrap();
        let slabs = Slabs::plan(cfg, seed);
        let layout = Layout::alloc(cfg, &slabs, &mut fresh, pid).unwrap();
        let store = Store::load(cfg, slabs, layout.slabs);
        (drain(&mut src, 500), layout, store)
    }

    #[test]
    fn size_classes_and_chunks_are_memcached_like() {
        let classes = slab_classes();
        assert_eq!(&classes[..4], &[64, 80, 104, 130u64.div_ceil(8) * 8]);
        assert_eq!(*classes.last().unwrap(), SLAB_PAGE);
        assert!(classes.windows(2).all(|w| w[1] > w[0]));
        let cfg = tiny();
        let slabs = Slabs::plan(&cfg, 1);
        let store = Store::load(&cfg, Slabs::plan(&cfg, 1), VirtAddr(0));
        // Every item fits its chunk, chunks never overlap nor cross a slab page.
        let mut spans: Vec<(u64, u64)> = (0..cfg.keys as u32)
            .map(|k| {
                let c = slabs.class_of(k as u64);
                let need = item_bytes(16, slabs.value_bytes(k as u64));
                assert!(need <= slabs.chunk_bytes(c) && (c == 0 || need > classes[c - 1]));
                let a = store.item_addr(k).0;
                assert_eq!(a / SLAB_PAGE, (a + slabs.chunk_bytes(c) - 1) / SLAB_PAGE);
                (a, a + slabs.chunk_bytes(c))
            })
            .collect();
        spans.sort();
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0));
        assert!(spans.last().unwrap().1 <= slabs.bytes());
    }

    #[test]
    fn requests_walk_the_chain_in_order_and_find_the_item() {
        let cfg = tiny();
        let (recs, layout, store) = run(&cfg, 7);
        let in_buckets = |r: &Record| {
            r.vaddr.0 >= layout.buckets.base.0 && r.vaddr.0 < layout.buckets.base.0 + 16 * 8
        };
        // Split the stream into requests at each bucket load.
        let starts: Vec<usize> = (0..recs.len()).filter(|&i| in_buckets(&recs[i])).collect();
        let nkey_addrs: std::collections::HashSet<u64> = (0..cfg.keys as u32)
            .map(|k| store.item_addr(k).0 + OFF_NKEY)
            .collect();
        let mut requests = Requests::new(&cfg, 7);
        let mut gets = 0;
        for w in starts.windows(2) {
            let (key, is_get) = requests.next();
            let req = &recs[w[0]..w[1]];
            let bucket = store.bucket_of(key as u64);
            assert_eq!(req[0].vaddr, layout.buckets.at(bucket));
            // Reference chain: keys of this bucket in reverse load order (head insertion).
            let chain: Vec<u32> = (0..cfg.keys as u32)
                .rev()
                .filter(|&k| store.bucket_of(k as u64) == bucket)
                .collect();
            assert_eq!(store.chain(bucket), chain);
            let upto = chain.iter().position(|&k| k == key).unwrap();
            let visited: Vec<usize> = (0..req.len())
                .filter(|&i| req[i].op == Op::Load && nkey_addrs.contains(&req[i].vaddr.0))
                .collect();
            let want: Vec<VirtAddr> = chain[..=upto]
                .iter()
                .map(|&k| VirtAddr(store.item_addr(k).0 + OFF_NKEY))
                .collect();
            assert_eq!(
                visited.iter().map(|&i| req[i].vaddr).collect::<Vec<_>>(),
                want
            );
            // Each item's first load depends on the pointer that led to it: the bucket, then the
            // previous item's h_next.
            for (n, &i) in visited.iter().enumerate() {
                let from = i - req[i].dep as usize;
                let want_from = if n == 0 {
                    layout.buckets.at(bucket)
                } else {
                    VirtAddr(store.item_addr(chain[n - 1]).0 + OFF_H_NEXT)
                };
                assert_eq!(req[from].vaddr, want_from);
            }
            // The value is read (get) or written (set) whole, after the key matched.
            let (value, bytes) = store.value_span(key);
            let want_op = if is_get { Op::Load } else { Op::Store };
            let touched: u64 = req
                .iter()
                .filter(|r| r.op == want_op && r.vaddr.0 >= value.0 && r.vaddr.0 < value.0 + bytes)
                .map(|r| r.size as u64)
                .sum();
            assert_eq!(touched, bytes);
            gets += is_get as u32;
        }
        assert!(gets > 100 && starts.len() > 300);
    }

    #[test]
    fn sets_move_items_to_the_lru_head() {
        let cfg = KvConfig {
            get_ratio: 0.0,
            ..tiny()
        };
        let mut store = Store::load(&cfg, Slabs::plan(&cfg, 1), VirtAddr(0));
        let c = store.class[5] as usize;
        let before = store.lru(c);
        // Loaded in key order, pushed at the head: the list runs from the class's last key down.
        let members: Vec<u32> = (0..cfg.keys as u32)
            .rev()
            .filter(|&k| store.class[k as usize] as usize == c)
            .collect();
        assert_eq!(before, members);
        store.lru_unlink(5);
        store.lru_push_head(5);
        let after = store.lru(c);
        assert_eq!(after[0], 5);
        let mut want: Vec<u32> = vec![5];
        want.extend(before.iter().filter(|&&k| k != 5));
        assert_eq!(after, want);
        // Tail consistency: walking prev from the tail gives the reverse list.
        let mut back = Vec::new();
        let mut at = store.lru_tail[c];
        while at != NONE {
            back.push(at);
            at = store.lru_prev[at as usize];
        }
        back.reverse();
        assert_eq!(back, after);
    }

    #[test]
    fn deterministic_per_seed() {
        let cfg = tiny();
        let a = stream_hash(&run(&cfg, 4).0);
        assert_eq!(a, stream_hash(&run(&cfg, 4).0));
        assert_ne!(a, stream_hash(&run(&cfg, 5).0));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let check = |f: fn(&mut KvConfig), key: &str| {
            let mut c = tiny();
            f(&mut c);
            let err = c.validate("workload").unwrap_err().to_string();
            assert!(err.contains(&format!("`workload.{key}`")), "{err}");
        };
        check(|c| c.keys = 0, "keys");
        check(|c| c.key_bytes = 251, "key_bytes");
        check(|c| c.value_min = 0, "value_min");
        check(|c| c.value_max = 5, "value_max");
        check(|c| c.value_max = 2 << 20, "value_max");
        check(|c| c.get_ratio = 1.1, "get_ratio");
        check(|c| c.zipf_alpha = -0.5, "zipf_alpha");
        check(|c| c.buckets = 1000, "buckets");
        assert!(tiny().validate("workload").is_ok());
    }

    #[test]
    fn default_footprint_is_over_a_gigabyte() {
        let mut cfg: KvConfig = toml::from_str("").unwrap();
        cfg.validate("workload").unwrap();
        assert_eq!(cfg.bucket_count(), 1 << 22);
        cfg.populate = false;
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        drop(build(&cfg, &mut os, pid, 1).unwrap());
        assert!(vma_bytes(&os) >= 1 << 30, "{}", vma_bytes(&os));
    }
}
