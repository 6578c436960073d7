//! `bst-int`: an internal (node-oriented) binary search tree as in ASCYLIB (SPARTA §7,
//! "BST-Internal"): every node holds a key. A lookup loads the root pointer, then at each node
//! its key and, unless it matches, the child pointer it follows; each node's loads depend on the
//! load of the pointer to it. Inserts hang a new leaf; deletes splice out a node with at most one
//! child, or replace a node with two children by its in-order successor.

use super::bst::{self, BinaryNodes, HostNode, Link, KEY, VALUE};
use super::emit::{Emitter, RecId, SimHeap, Stop, ThreadedSource};
use super::index::{self, IndexConfig, IndexStructure, KeySpace, NodePool, NIL};
use crate::addr::VirtAddr;
use crate::error::Result;
use crate::os::{AddressSpaces, MapKind};
use crate::rng::Rng;

pub fn build(
    cfg: &IndexConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let mix = cfg.mix();
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let (root_ptr, pool) = BinaryNodes::alloc(&mut heap, os, mix.max_keys())?;
    Ok(index::spawn_team(
        pid,
        cfg.references,
        mix,
        seed,
        cfg.threads,
        move |keys, rng| InternalBst::build(root_ptr, pool, keys, rng),
    ))
}

#[derive(Clone, Debug)]
pub(crate) struct InternalBst {
    t: BinaryNodes,
}

/// End of a search: the node holding the key (or `NIL`), the link pointing to where it is (or
/// would be), and the load of the pointer to it.
struct Found {
    node: u32,
    link: Link,
    ptr: RecId,
}

impl InternalBst {
    /// The tree random insertion of the start keys gives; node `t` is the `t`-th inserted.
    pub fn build(
        root_ptr: VirtAddr,
        mut pool: NodePool,
        keys: &KeySpace,
        rng: &mut Rng,
    ) -> InternalBst {
        let time = bst::insertion_times(keys.n, rng);
        let (kids, root) = bst::cartesian_tree(&time);
        let id = |pos: u32| if pos == NIL { NIL } else { time[pos as usize] };
        pool.claim_prefix(keys.n as u32);
        let mut t = BinaryNodes::empty(root_ptr, pool);
        t.nodes = vec![HostNode::EMPTY; keys.n as usize];
        for (pos, k) in kids.iter().enumerate() {
            let n = time[pos] as usize;
            t.nodes[n].key = keys.initial(pos as u64);
            t.nodes[n].kids = [id(k[0]), id(k[1])];
        }
        t.root = id(root);
        InternalBst { t }
    }

    fn search(&self, e: &mut Emitter, key: u64) -> std::result::Result<Found, Stop> {
        let t = &self.t;
        let mut link = Link {
            parent: NIL,
            dir: 0,
            on: None,
        };
        let mut ptr = e.load(t.root_ptr, 8)?;
        let mut node = t.root;
        while node != NIL {
            e.load_dep(t.addr(node, KEY), 8, ptr)?;
            e.instr(3);
            let here = t.nodes[node as usize].key;
            if here == key {
                break;
            }
            let dir = usize::from(key > here);
            link = Link {
                parent: node,
                dir,
                on: Some(ptr),
            };
            ptr = t.load_child(e, node, dir, Some(ptr))?;
            node = t.nodes[node as usize].kids[dir];
        }
        Ok(Found { node, link, ptr })
    }
}

impl index::SharedLookup for InternalBst {
    fn lookup_shared(&self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let f = self.search(e, key)?;
        if f.node == NIL {
            return Ok(false);
        }
        e.load_dep(self.t.addr(f.node, VALUE), 8, f.ptr)?;
        Ok(true)
    }
}

impl IndexStructure for InternalBst {
    fn lookup(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        index::SharedLookup::lookup_shared(self, e, key)
    }

    fn insert(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let f = self.search(e, key)?;
        if f.node != NIL {
            return Ok(false);
        }
        let n = self.t.new_node(key)?;
        e.instr(4);
        self.t.store_node(e, n)?;
        self.t.relink(e, f.link, n)?;
        Ok(true)
    }

    fn remove(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let f = self.search(e, key)?;
        let z = f.node;
        if z == NIL {
            return Ok(false);
        }
        let t = &mut self.t;
        let zptr = Some(f.ptr);
        t.load_child(e, z, 0, zptr)?;
        let right_ptr = t.load_child(e, z, 1, zptr)?;
        let [l, r] = t.nodes[z as usize].kids;
        if l == NIL || r == NIL {
            t.relink(e, f.link, if l == NIL { r } else { l })?;
            t.pool.release(z);
            return Ok(true);
        }
        // Two children: the successor (leftmost of the right subtree) moves into `z`.
        let mut succ_link = Link {
            parent: z,
            dir: 1,
            on: zptr,
        };
        let (mut s, mut sptr) = (r, right_ptr);
        loop {
            let left_ptr = t.load_child(e, s, 0, Some(sptr))?;
            let left = t.nodes[s as usize].kids[0];
            if left == NIL {
                break;
            }
            succ_link = Link {
                parent: s,
                dir: 0,
                on: Some(sptr),
            };
            (s, sptr) = (left, left_ptr);
        }
        e.load_dep(t.addr(s, KEY), 8, sptr)?;
        e.load_dep(t.addr(s, VALUE), 8, sptr)?;
        e.store_dep(t.addr(z, KEY), 8, f.ptr)?;
        e.store_dep(t.addr(z, VALUE), 8, f.ptr)?;
        t.nodes[z as usize].key = t.nodes[s as usize].key;
        t.load_child(e, s, 1, Some(sptr))?;
        let s_right = t.nodes[s as usize].kids[1];
        t.relink(e, succ_link, s_right)?;
        t.pool.release(s);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;
    use crate::workload::testutil::{self, addrs};

    fn tiny(keys: u64, max_keys: u64) -> (InternalBst, KeySpace) {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let (root_ptr, pool) = BinaryNodes::alloc(&mut heap, &mut os, max_keys).unwrap();
        let mut rng = Rng::new(11, WORKLOAD);
        let ks = KeySpace::new(keys, &mut rng);
        (InternalBst::build(root_ptr, pool, &ks, &mut rng), ks)
    }

    fn in_order(t: &BinaryNodes, n: u32, out: &mut Vec<u64>) {
        if n != NIL {
            in_order(t, t.nodes[n as usize].kids[0], out);
            out.push(t.nodes[n as usize].key);
            in_order(t, t.nodes[n as usize].kids[1], out);
        }
    }

    /// Reference: root pointer, then each node's key and the child pointer followed; the value
    /// of the node holding the key.
    fn reference_lookup(t: &BinaryNodes, key: u64) -> Vec<u64> {
        let node = |n: u32| t.pool.array.base.0 + 32 * n as u64;
        let mut out = vec![t.root_ptr.0];
        let mut n = t.root;
        while n != NIL {
            out.push(node(n));
            let k = t.nodes[n as usize].key;
            if k == key {
                out.push(node(n) + 8);
                break;
            }
            let right = key > k;
            out.push(node(n) + if right { 24 } else { 16 });
            n = t.nodes[n as usize].kids[usize::from(right)];
        }
        out
    }

    #[test]
    fn start_tree_is_a_balanced_search_tree_of_the_start_keys() {
        let (b, ks) = tiny(1 << 14, 1 << 14);
        let mut keys = Vec::new();
        in_order(&b.t, b.t.root, &mut keys);
        assert_eq!(keys, (0..ks.n).map(|i| ks.initial(i)).collect::<Vec<_>>());
        // A random BST of 2^14 keys is about 2.99 ln n ~ 29 deep, rarely more than 40.
        let h = bst::tests::height(&b.t.nodes, b.t.root);
        assert!((20..45).contains(&h), "{h}");
    }

    #[test]
    fn lookup_reads_exactly_the_root_to_node_path() {
        let (b, ks) = tiny(200, 200);
        for key in 0..ks.universe() {
            let mut bb = b.clone();
            let recs = testutil::run(move |e| bb.lookup(e, key).map(|_| ()));
            assert_eq!(addrs(&recs), reference_lookup(&b.t, key), "key {key}");
            assert_eq!(recs[0].dep, 0);
            assert!(recs[1..].iter().all(|r| r.dep >= 1));
        }
    }

    #[test]
    fn updates_keep_the_tree_valid() {
        let (b, ks) = tiny(300, 600);
        let initial = (0..ks.n).map(|i| ks.initial(i)).collect();
        testutil::check_against_set(b, initial, ks.universe(), 5000, 3);
    }

    #[test]
    fn same_seed_same_stream_and_large_default_footprint() {
        let cfg = IndexConfig {
            keys: 3000,
            update_ratio: 0.3,
            zipf_alpha: 1.1,
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
        assert_eq!(stream(5), stream(5));
        assert_ne!(stream(5), stream(6));

        let c: IndexConfig = toml::from_str("populate = false").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        drop(build(&c, &mut os, pid, 1).unwrap());
        assert!(testutil::footprint(&os, pid) >= 128 << 20);
    }
}
