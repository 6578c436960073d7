//! `hashtable`: a chained hash table as in ASCYLIB (SPARTA §7, "Hash Table"): an array
//! of bucket head pointers, each the head of a singly linked list of nodes from a node pool. A
//! lookup loads the bucket's head pointer, then every node of the chain (its key, then its next
//! pointer), each load's address coming from the previous pointer load. Inserts link a new node
//! at the chain head; deletes unlink the node from its predecessor.

use super::emit::{Array, Emitter, RecId, SimHeap, Stop, ThreadedSource};
use super::index::{self, IndexConfig, IndexStructure, KeySpace, NodePool, Permutation, NIL};
use crate::error::Result;
use crate::os::{AddressSpaces, MapKind};
use crate::rng::Rng;

/// Node layout: key, value, next pointer, and 8 bytes of allocator padding (32-byte class).
const NODE_BYTES: u64 = 32;
const KEY: u64 = 0;
const VALUE: u64 = 8;
const NEXT: u64 = 16;

/// Allocate the bucket array (one bucket per start key, rounded up to a power of two) and the
/// node pool in `pid`, and start the benchmark.
pub fn build(
    cfg: &IndexConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let mix = cfg.mix();
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let buckets = heap.array(os, cfg.keys.next_power_of_two(), 8)?;
    let pool = NodePool::new(&mut heap, os, mix.max_keys(), NODE_BYTES)?;
    Ok(index::spawn_team(
        pid,
        cfg.references,
        mix,
        seed,
        cfg.threads,
        move |keys, rng| HashTable::build(buckets, pool, keys, rng),
    ))
}

/// The host mirror: chain heads per bucket, and per node its key and successor.
#[derive(Clone, Debug)]
pub(crate) struct HashTable {
    buckets: Array,
    pool: NodePool,
    head: Vec<u32>,
    key: Vec<u64>,
    next: Vec<u32>,
}

/// Where a key's search ended: the node holding it (or `NIL`), its predecessor in the chain (or
/// `NIL` for the bucket head), and the load that produced the pointer to `node`.
struct Found {
    bucket: u64,
    prev: u32,
    node: u32,
    ptr: RecId,
}

impl HashTable {
    /// Insert the start keys in random order, as the benchmark's initialisation does.
    pub fn build(buckets: Array, pool: NodePool, keys: &KeySpace, rng: &mut Rng) -> HashTable {
        let mut t = HashTable {
            buckets,
            pool,
            head: vec![NIL; buckets.len as usize],
            key: Vec::new(),
            next: Vec::new(),
        };
        let order = Permutation::new(keys.n, rng);
        for i in 0..keys.n {
            let node = t.pool.alloc().expect("the pool holds every start key");
            t.link(node, keys.initial(order.apply(i)));
        }
        t
    }

    fn bucket(&self, key: u64) -> u64 {
        index::mix64(key) & (self.buckets.len - 1)
    }

    /// Host side of an insert: `node` becomes the head of its key's chain.
    fn link(&mut self, node: u32, key: u64) -> u64 {
        let b = self.bucket(key);
        if node as usize == self.key.len() {
            self.key.push(key);
            self.next.push(NIL);
        }
        self.key[node as usize] = key;
        self.next[node as usize] = self.head[b as usize];
        self.head[b as usize] = node;
        b
    }

    /// Hash, load the bucket head, and walk the chain until `key`.
    fn find(&self, e: &mut Emitter, key: u64) -> std::result::Result<Found, Stop> {
        e.instr(8);
        let bucket = self.bucket(key);
        let mut ptr = e.load(self.buckets.at(bucket), 8)?;
        let (mut prev, mut node) = (NIL, self.head[bucket as usize]);
        while node != NIL {
            e.load_dep(self.pool.at(node, KEY), 8, ptr)?;
            e.instr(2);
            if self.key[node as usize] == key {
                break;
            }
            ptr = e.load_dep(self.pool.at(node, NEXT), 8, ptr)?;
            prev = node;
            node = self.next[node as usize];
        }
        Ok(Found {
            bucket,
            prev,
            node,
            ptr,
        })
    }
}

impl index::SharedLookup for HashTable {
    fn lookup_shared(&self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let f = self.find(e, key)?;
        if f.node == NIL {
            return Ok(false);
        }
        e.load_dep(self.pool.at(f.node, VALUE), 8, f.ptr)?;
        Ok(true)
    }
}

impl IndexStructure for HashTable {
    fn lookup(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        index::SharedLookup::lookup_shared(self, e, key)
    }

    fn insert(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let f = self.find(e, key)?;
        if f.node != NIL {
            return Ok(false);
        }
        let node = self.pool.alloc()?;
        self.link(node, key);
        e.instr(4);
        for field in [KEY, VALUE, NEXT] {
            e.store(self.pool.at(node, field), 8)?;
        }
        e.store(self.buckets.at(f.bucket), 8)?;
        Ok(true)
    }

    fn remove(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let f = self.find(e, key)?;
        if f.node == NIL {
            return Ok(false);
        }
        let succ = e.load_dep(self.pool.at(f.node, NEXT), 8, f.ptr)?;
        let after = self.next[f.node as usize];
        if f.prev == NIL {
            self.head[f.bucket as usize] = after;
            e.store(self.buckets.at(f.bucket), 8)?;
        } else {
            self.next[f.prev as usize] = after;
            e.store_dep(self.pool.at(f.prev, NEXT), 8, succ)?;
        }
        self.pool.release(f.node);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;
    use crate::trace::Op;
    use crate::workload::testutil::{self, addrs};

    fn tiny(keys: u64, max_keys: u64) -> (HashTable, KeySpace) {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let buckets = heap
            .array(&mut os, (keys / 4).next_power_of_two(), 8)
            .unwrap();
        let pool = NodePool::new(&mut heap, &mut os, max_keys, NODE_BYTES).unwrap();
        let mut rng = Rng::new(5, WORKLOAD);
        let ks = KeySpace::new(keys, &mut rng);
        (HashTable::build(buckets, pool, &ks, &mut rng), ks)
    }

    /// Reference: bucket head, then key (and next, unless it matches) of each chain node, then
    /// the value of a hit.
    fn reference_lookup(t: &HashTable, key: u64) -> Vec<u64> {
        let b = index::mix64(key) % t.buckets.len;
        let mut out = vec![t.buckets.base.0 + 8 * b];
        let mut n = t.head[b as usize];
        while n != NIL {
            let node = t.pool.array.base.0 + NODE_BYTES * n as u64;
            out.push(node);
            if t.key[n as usize] == key {
                out.push(node + 8);
                break;
            }
            out.push(node + 16);
            n = t.next[n as usize];
        }
        out
    }

    #[test]
    fn lookup_loads_bucket_then_chain_in_order() {
        let (t, ks) = tiny(64, 64);
        let longest = (0..t.buckets.len)
            .map(|b| {
                let mut len = 0;
                let mut n = t.head[b as usize];
                while n != NIL {
                    len += 1;
                    n = t.next[n as usize];
                }
                len
            })
            .max()
            .unwrap();
        assert!(longest >= 3, "chains long enough to test walking");
        for key in 0..ks.universe() {
            let mut tt = t.clone();
            let recs = testutil::run(move |e| tt.lookup(e, key).map(|_| ()));
            assert_eq!(addrs(&recs), reference_lookup(&t, key), "key {key}");
            assert!(recs.iter().all(|r| r.op == Op::Load));
            // Every node load depends on the pointer load just before its key (or bucket).
            assert_eq!(recs[0].dep, 0);
            assert!(recs[1..].iter().all(|r| r.dep >= 1));
        }
    }

    #[test]
    fn updates_keep_the_table_valid() {
        let (t, ks) = tiny(200, 400);
        let initial = (0..ks.n).map(|i| ks.initial(i)).collect();
        testutil::check_against_set(t, initial, ks.universe(), 3000, 1);
    }

    fn cfg(keys: u64) -> IndexConfig {
        IndexConfig {
            keys,
            update_ratio: 0.1,
            zipf_alpha: 0.8,
            references: 50_000,
            populate: true,
            threads: 1,
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let stream = |seed| {
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            testutil::stream_hash(&testutil::drain_owned(
                build(&cfg(5000), &mut os, pid, seed).unwrap(),
            ))
        };
        assert_eq!(stream(1), stream(1));
        assert_ne!(stream(1), stream(2));
    }

    #[test]
    fn default_footprint_is_large() {
        let c: IndexConfig = toml::from_str("populate = false").unwrap();
        c.validate("workload").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        drop(build(&c, &mut os, pid, 1).unwrap());
        assert!(testutil::footprint(&os, pid) > 128 << 20);
    }
}
