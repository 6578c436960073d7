//! `bst-ext`: an external (leaf-oriented) binary search tree as in ASCYLIB (SPARTA §7,
//! "BST-External"; the layout of Natarajan and Mittal's tree): keys live in leaves, internal
//! nodes only route (left if the key is smaller than the routing key, else right). A lookup loads
//! the root pointer, then at each node its key and the child pointer it follows, down to a leaf
//! (whose child pointers are null); every load depends on the load of the pointer to its node.
//! An insert replaces the leaf it reaches by a routing node over the old and the new leaf; a
//! delete replaces the leaf's parent by the leaf's sibling.

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
    let (root_ptr, pool) = BinaryNodes::alloc(&mut heap, os, 2 * mix.max_keys() - 1)?;
    Ok(index::spawn_team(
        pid,
        cfg.references,
        mix,
        seed,
        cfg.threads,
        move |keys, rng| ExternalBst::build(root_ptr, pool, keys, rng),
    ))
}

#[derive(Clone, Debug)]
pub(crate) struct ExternalBst {
    t: BinaryNodes,
}

/// End of a search: the leaf reached, the load of the pointer to it, the link to the leaf (from
/// its parent) and the link to the parent (from the grandparent).
struct Found {
    leaf: u32,
    ptr: RecId,
    to_leaf: Link,
    to_parent: Link,
}

impl ExternalBst {
    /// The start tree: leaves are the start keys; routing node `j` (key `initial(j)`, j >= 1)
    /// separates leaves `j-1` and `j`. Routing nodes form the random treap of a random insertion
    /// order; leaf `j` is node `time[j]`, routing nodes follow them in insertion order.
    pub fn build(
        root_ptr: VirtAddr,
        mut pool: NodePool,
        keys: &KeySpace,
        rng: &mut Rng,
    ) -> ExternalBst {
        let n = keys.n as usize;
        let time = bst::insertion_times(keys.n, rng);
        let (kids, root) = bst::cartesian_tree(&time[1..]);
        // Routing position p (0-based) is the separator of leaves p and p + 1.
        let routing_id = |p: usize| keys.n as u32 + time[p + 1] - u32::from(time[p + 1] > time[0]);
        pool.claim_prefix((2 * n - 1) as u32);
        let mut t = BinaryNodes::empty(root_ptr, pool);
        t.nodes = vec![HostNode::EMPTY; 2 * n - 1];
        for (j, &leaf) in time.iter().enumerate() {
            t.nodes[leaf as usize].key = keys.initial(j as u64);
        }
        for (p, k) in kids.iter().enumerate() {
            let id = routing_id(p) as usize;
            t.nodes[id].key = keys.initial(p as u64 + 1);
            t.nodes[id].kids = [
                if k[0] == NIL {
                    time[p]
                } else {
                    routing_id(k[0] as usize)
                },
                if k[1] == NIL {
                    time[p + 1]
                } else {
                    routing_id(k[1] as usize)
                },
            ];
        }
        t.root = if root == NIL {
            time[0]
        } else {
            routing_id(root as usize)
        };
        ExternalBst { t }
    }

    /// Route from the root to a leaf; `None` on an empty tree.
    fn search(&self, e: &mut Emitter, key: u64) -> std::result::Result<Option<Found>, Stop> {
        let t = &self.t;
        let mut ptr = e.load(t.root_ptr, 8)?;
        let root = Link {
            parent: NIL,
            dir: 0,
            on: None,
        };
        let (mut to_node, mut to_parent) = (root, root);
        let mut node = t.root;
        if node == NIL {
            return Ok(None);
        }
        loop {
            e.load_dep(t.addr(node, KEY), 8, ptr)?;
            e.instr(3);
            let dir = usize::from(key >= t.nodes[node as usize].key);
            let child_ptr = t.load_child(e, node, dir, Some(ptr))?;
            let child = t.nodes[node as usize].kids[dir];
            if child == NIL {
                return Ok(Some(Found {
                    leaf: node,
                    ptr,
                    to_leaf: to_node,
                    to_parent,
                }));
            }
            to_parent = to_node;
            to_node = Link {
                parent: node,
                dir,
                on: Some(ptr),
            };
            (node, ptr) = (child, child_ptr);
        }
    }
}

impl index::SharedLookup for ExternalBst {
    fn lookup_shared(&self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        match self.search(e, key)? {
            Some(f) if self.t.nodes[f.leaf as usize].key == key => {
                e.load_dep(self.t.addr(f.leaf, VALUE), 8, f.ptr)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl IndexStructure for ExternalBst {
    fn lookup(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        index::SharedLookup::lookup_shared(self, e, key)
    }

    fn insert(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let found = self.search(e, key)?;
        let t = &mut self.t;
        let Some(f) = found else {
            let leaf = t.new_node(key)?;
            t.store_node(e, leaf)?;
            let root = Link {
                parent: NIL,
                dir: 0,
                on: None,
            };
            t.relink(e, root, leaf)?;
            return Ok(true);
        };
        let old = t.nodes[f.leaf as usize].key;
        if old == key {
            return Ok(false);
        }
        let leaf = t.new_node(key)?;
        let router = t.new_node(key.max(old))?;
        t.nodes[router as usize].kids = if key < old {
            [leaf, f.leaf]
        } else {
            [f.leaf, leaf]
        };
        e.instr(6);
        t.store_node(e, leaf)?;
        t.store_node(e, router)?;
        t.relink(e, f.to_leaf, router)?;
        Ok(true)
    }

    fn remove(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let Some(f) = self.search(e, key)? else {
            return Ok(false);
        };
        let t = &mut self.t;
        if t.nodes[f.leaf as usize].key != key {
            return Ok(false);
        }
        let parent = f.to_leaf.parent;
        if parent == NIL {
            t.relink(e, f.to_leaf, NIL)?;
        } else {
            let other = 1 - f.to_leaf.dir;
            t.load_child(e, parent, other, f.to_leaf.on)?;
            let sibling = t.nodes[parent as usize].kids[other];
            t.relink(e, f.to_parent, sibling)?;
            t.pool.release(parent);
        }
        t.pool.release(f.leaf);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;
    use crate::workload::testutil::{self, addrs};

    fn tiny(keys: u64, max_keys: u64) -> (ExternalBst, KeySpace) {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let (root_ptr, pool) = BinaryNodes::alloc(&mut heap, &mut os, 2 * max_keys - 1).unwrap();
        let mut rng = Rng::new(13, WORKLOAD);
        let ks = KeySpace::new(keys, &mut rng);
        (ExternalBst::build(root_ptr, pool, &ks, &mut rng), ks)
    }

    /// Leaves in order, checking that every routing key separates its subtrees.
    fn leaves(t: &BinaryNodes, n: u32, lo: u64, hi: u64, out: &mut Vec<u64>) {
        let [l, r] = t.nodes[n as usize].kids;
        let k = t.nodes[n as usize].key;
        assert!(lo <= k && k < hi, "key {k} outside [{lo}, {hi})");
        if l == NIL {
            assert_eq!(r, NIL, "a node has both children or none");
            out.push(k);
        } else {
            leaves(t, l, lo, k, out);
            leaves(t, r, k, hi, out);
        }
    }

    /// Reference: root pointer, then each node's key and the child pointer followed, ending at
    /// the leaf (whose followed pointer is null); the leaf's value on a hit.
    fn reference_lookup(t: &BinaryNodes, key: u64) -> Vec<u64> {
        let node = |n: u32| t.pool.array.base.0 + 32 * n as u64;
        let mut out = vec![t.root_ptr.0];
        let mut n = t.root;
        loop {
            let right = key >= t.nodes[n as usize].key;
            out.extend([node(n), node(n) + if right { 24 } else { 16 }]);
            let next = t.nodes[n as usize].kids[usize::from(right)];
            if next == NIL {
                if t.nodes[n as usize].key == key {
                    out.push(node(n) + 8);
                }
                return out;
            }
            n = next;
        }
    }

    #[test]
    fn start_tree_has_the_start_keys_as_leaves() {
        let (b, ks) = tiny(1 << 14, 1 << 14);
        let mut keys = Vec::new();
        leaves(&b.t, b.t.root, 0, u64::MAX, &mut keys);
        assert_eq!(keys, (0..ks.n).map(|i| ks.initial(i)).collect::<Vec<_>>());
        let h = bst::tests::height(&b.t.nodes, b.t.root);
        assert!((20..48).contains(&h), "{h}");
    }

    #[test]
    fn lookup_reads_exactly_the_root_to_leaf_path() {
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
        testutil::check_against_set(b.clone(), initial, ks.universe(), 5000, 4);
        // Also from a single leaf through empty and back.
        let (one, ks1) = tiny(1, 2);
        testutil::check_against_set(one, vec![ks1.initial(0)], 2, 200, 5);
    }

    #[test]
    fn same_seed_same_stream_and_large_default_footprint() {
        let cfg = IndexConfig {
            keys: 3000,
            update_ratio: 0.3,
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
        assert_eq!(stream(5), stream(5));
        assert_ne!(stream(5), stream(6));

        let c: IndexConfig = toml::from_str("populate = false").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        drop(build(&c, &mut os, pid, 1).unwrap());
        assert!(testutil::footprint(&os, pid) >= 256 << 20);
    }
}
