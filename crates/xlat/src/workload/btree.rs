//! `btree`: a B+ tree index over u64 keys (the B-tree workloads of SPARTA §7), bulk
//! loaded in simulated memory from the sorted start keys. A lookup loads the root pointer, then
//! in each inner node its key count, the keys a binary search probes and the child pointer it
//! follows, and in the leaf its count, the probed keys and (on a hit) the value; every load in a
//! node depends on the child-pointer load that produced the node's address. Inserts shift keys
//! within the leaf and split full nodes up to the root; deletes shift keys out of the leaf
//! without merging (free-at-empty style, as many production B-trees do).
//!
//! Node layouts (rounded up to 64-byte lines): inner = count, `fanout - 1` keys, `fanout`
//! children; leaf = count, next-leaf pointer, `fanout` keys, `fanout` values.

use super::emit::{Emitter, RecId, SimHeap, Stop, ThreadedSource};
use super::index::{self, IndexStructure, KeySpace, MixConfig, NodePool};
use crate::addr::VirtAddr;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BtreeConfig {
    /// Keys in the tree at the start (the key universe is twice as large).
    #[serde(default = "default_keys")]
    pub keys: u64,
    /// Children per inner node and keys per leaf (16: a 256-byte inner node, 4 cache lines).
    #[serde(default = "default_fanout")]
    pub fanout: u64,
    /// Fraction of operations that update (half inserts, half deletes); the rest are lookups.
    #[serde(default)]
    pub update_ratio: f64,
    /// Zipf exponent of the key popularity; 0 = uniform.
    #[serde(default)]
    pub zipf_alpha: f64,
    /// Memory references to emit.
    #[serde(default = "index::default_refs")]
    pub references: u64,
    /// Map the memory before the first reference (the tree is loaded before measuring).
    #[serde(default = "index::default_populate")]
    pub populate: bool,
}

fn default_keys() -> u64 {
    1 << 24
}
fn default_fanout() -> u64 {
    16
}

impl BtreeConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.mix().validate(path)?;
        if !(4..=256).contains(&self.fanout) {
            return Err(Error::config(
                format!("{path}.fanout"),
                format!("must be in 4..=256, got {}", self.fanout),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }

    fn mix(&self) -> MixConfig {
        MixConfig {
            keys: self.keys,
            update_ratio: self.update_ratio,
            zipf_alpha: self.zipf_alpha,
        }
    }
}

/// Byte offsets inside the nodes of a tree of fanout `f`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    f: u64,
}

const COUNT: u64 = 0;
const NEXT_LEAF: u64 = 8;

impl Shape {
    fn inner_bytes(self) -> u64 {
        (8 + 8 * (self.f - 1) + 8 * self.f).next_multiple_of(64)
    }
    fn leaf_bytes(self) -> u64 {
        (16 + 16 * self.f).next_multiple_of(64)
    }
    fn inner_key(self, i: usize) -> u64 {
        8 + 8 * i as u64
    }
    fn inner_kid(self, i: usize) -> u64 {
        8 + 8 * (self.f - 1) + 8 * i as u64
    }
    fn leaf_key(self, i: usize) -> u64 {
        16 + 8 * i as u64
    }
    fn leaf_value(self, i: usize) -> u64 {
        16 + 8 * self.f + 8 * i as u64
    }

    /// Leaf and inner node counts for up to `keys` keys with nodes at least `fill` full.
    fn capacity(self, keys: u64, fill: u64) -> (u64, u64) {
        let leaves = keys.div_ceil(fill).max(1);
        let (mut level, mut inner) = (leaves, 0);
        while level > 1 {
            level = level.div_ceil(fill);
            inner += level;
        }
        (leaves, inner.max(1))
    }
}

pub fn build(
    cfg: &BtreeConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let mix = cfg.mix();
    let shape = Shape { f: cfg.fanout };
    // Bulk loading fills nodes; splits leave them half full.
    let fill = if cfg.update_ratio > 0.0 {
        cfg.fanout / 2
    } else {
        cfg.fanout
    };
    let (leaves, inner) = shape.capacity(mix.max_keys(), fill);
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let root_ptr = heap.alloc(os, 8, 8)?;
    let leaf_pool = NodePool::new(&mut heap, os, leaves, shape.leaf_bytes())?;
    let inner_pool = NodePool::new(&mut heap, os, inner + 1, shape.inner_bytes())?;
    Ok(index::spawn(
        pid,
        cfg.references,
        mix,
        seed,
        move |keys, _rng: &mut Rng| BTree::bulk_load(shape, root_ptr, leaf_pool, inner_pool, keys),
    ))
}

/// The host mirror: keys and counts of every node, children of inner nodes.
#[derive(Clone, Debug)]
pub(crate) struct BTree {
    shape: Shape,
    root_ptr: VirtAddr,
    leaves: NodePool,
    inners: NodePool,
    /// Inner levels above the leaves (0: the root is a leaf).
    height: u32,
    root: u32,
    leaf_count: Vec<u16>,
    /// Leaf `l`'s keys at `[l * f ..][.. count]`.
    leaf_keys: Vec<u64>,
    inner_count: Vec<u16>,
    /// Inner node `n`'s keys at `[n * (f - 1) ..][.. count]`, children at `[n * f ..][.. count + 1]`.
    inner_keys: Vec<u64>,
    inner_kids: Vec<u32>,
    /// Scratch: the inner nodes of the last search, the child taken, the load of their pointer.
    path: Vec<(u32, usize, RecId)>,
}

/// Where a key's search ended in its leaf.
struct LeafPos {
    leaf: u32,
    ptr: RecId,
    pos: usize,
    found: bool,
}

impl BTree {
    /// Bulk load: leaves filled in key order, then each inner level over the one below.
    fn bulk_load(
        shape: Shape,
        root_ptr: VirtAddr,
        leaves: NodePool,
        inners: NodePool,
        keys: &KeySpace,
    ) -> BTree {
        let f = shape.f as usize;
        let mut t = BTree {
            shape,
            root_ptr,
            leaves,
            inners,
            height: 0,
            root: 0,
            leaf_count: Vec::new(),
            leaf_keys: Vec::new(),
            inner_count: Vec::new(),
            inner_keys: Vec::new(),
            inner_kids: Vec::new(),
            path: Vec::new(),
        };
        // (node, smallest key below it) of the level being built on.
        let mut level = Vec::new();
        for first in (0..keys.n).step_by(f) {
            let l = t.new_leaf().expect("the pool holds the start leaves");
            let count = (keys.n - first).min(shape.f);
            for i in 0..count {
                t.leaf_keys[l as usize * f + i as usize] = keys.initial(first + i);
            }
            t.leaf_count[l as usize] = count as u16;
            level.push((l, keys.initial(first)));
        }
        while level.len() > 1 {
            let mut up = Vec::new();
            for group in level.chunks(f) {
                let n = t.new_inner().expect("the pool holds the start inner nodes");
                for (i, &(child, min)) in group.iter().enumerate() {
                    t.inner_kids[n as usize * f + i] = child;
                    if i > 0 {
                        t.inner_keys[n as usize * (f - 1) + i - 1] = min;
                    }
                }
                t.inner_count[n as usize] = (group.len() - 1) as u16;
                up.push((n, group[0].1));
            }
            level = up;
            t.height += 1;
        }
        t.root = level[0].0;
        t
    }

    fn new_leaf(&mut self) -> std::result::Result<u32, Stop> {
        let l = self.leaves.alloc()?;
        let f = self.shape.f as usize;
        if l as usize >= self.leaf_count.len() {
            self.leaf_count.push(0);
            self.leaf_keys.resize((l as usize + 1) * f, 0);
        }
        Ok(l)
    }

    fn new_inner(&mut self) -> std::result::Result<u32, Stop> {
        let n = self.inners.alloc()?;
        let f = self.shape.f as usize;
        if n as usize >= self.inner_count.len() {
            self.inner_count.push(0);
            self.inner_keys.resize((n as usize + 1) * (f - 1), 0);
            self.inner_kids.resize((n as usize + 1) * f, 0);
        }
        Ok(n)
    }

    fn leaf(&self, l: u32) -> &[u64] {
        let f = self.shape.f as usize;
        &self.leaf_keys[l as usize * f..][..self.leaf_count[l as usize] as usize]
    }
    fn inner(&self, n: u32) -> &[u64] {
        let k = self.shape.f as usize - 1;
        &self.inner_keys[n as usize * k..][..self.inner_count[n as usize] as usize]
    }
    fn kid(&self, n: u32, i: usize) -> u32 {
        self.inner_kids[n as usize * self.shape.f as usize + i]
    }

    /// Root to leaf, recording the inner path; binary search in every node (upper bound in
    /// inner nodes, lower bound in the leaf), emitting each probe.
    fn search(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<LeafPos, Stop> {
        self.path.clear();
        let s = self.shape;
        let mut ptr = e.load(self.root_ptr, 8)?;
        let mut node = self.root;
        for _ in 0..self.height {
            e.load_dep(self.inners.at(node, COUNT), 8, ptr)?;
            let keys = self.inner(node);
            let (mut lo, mut hi) = (0, keys.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                e.load_dep(self.inners.at(node, s.inner_key(mid)), 8, ptr)?;
                e.instr(4);
                if keys[mid] <= key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            self.path.push((node, lo, ptr));
            ptr = e.load_dep(self.inners.at(node, s.inner_kid(lo)), 8, ptr)?;
            node = self.kid(node, lo);
        }
        e.load_dep(self.leaves.at(node, COUNT), 8, ptr)?;
        let keys = self.leaf(node);
        let (mut lo, mut hi) = (0, keys.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            e.load_dep(self.leaves.at(node, s.leaf_key(mid)), 8, ptr)?;
            e.instr(4);
            if keys[mid] < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(LeafPos {
            leaf: node,
            ptr,
            pos: lo,
            found: lo < keys.len() && keys[lo] == key,
        })
    }

    /// Insert `sep` (the smallest key under `right`) into the parent at path depth `depth`
    /// after its child `at`, splitting upwards as needed; a new root when the path is empty.
    fn insert_up(
        &mut self,
        e: &mut Emitter,
        depth: usize,
        sep: u64,
        right: u32,
    ) -> std::result::Result<(), Stop> {
        let s = self.shape;
        let f = s.f as usize;
        if depth == 0 {
            let old = self.root;
            let n = self.new_inner()?;
            self.inner_count[n as usize] = 1;
            self.inner_keys[n as usize * (f - 1)] = sep;
            self.inner_kids[n as usize * f] = old;
            self.inner_kids[n as usize * f + 1] = right;
            for off in [COUNT, s.inner_key(0), s.inner_kid(0), s.inner_kid(1)] {
                e.store(self.inners.at(n, off), 8)?;
            }
            self.root = n;
            self.height += 1;
            e.store(self.root_ptr, 8)?;
            return Ok(());
        }
        let (node, at, ptr) = self.path[depth - 1];
        let mut keys = self.inner(node).to_vec();
        let count = keys.len();
        let mut kids: Vec<u32> = (0..=count).map(|i| self.kid(node, i)).collect();
        keys.insert(at, sep);
        kids.insert(at + 1, right);
        // Keys [0, m) and children [0, m] stay; key m moves up on a split.
        let (stay, sibling) = if keys.len() < f {
            (keys.len(), None)
        } else {
            (f / 2, Some(self.new_inner()?))
        };
        let kid_src = |i: usize| (i != at + 1).then(|| if i <= at { i } else { i - 1 });
        let key_src = |i: usize| (i != at).then(|| if i < at { i } else { i - 1 });
        // On a split key `stay` moves up to the parent: it is stored in neither node.
        let up = sibling.map(|_| stay);
        self.emit_moves(
            e,
            keys.len(),
            key_src,
            |i| {
                if i < stay {
                    (None, i)
                } else {
                    (sibling, i - stay - 1)
                }
            },
            |t, n, i| t.inners.at(n, s.inner_key(i)),
            node,
            ptr,
            up,
        )?;
        self.emit_moves(
            e,
            kids.len(),
            kid_src,
            |i| {
                if i <= stay {
                    (None, i)
                } else {
                    (sibling, i - stay - 1)
                }
            },
            |t, n, i| t.inners.at(n, s.inner_kid(i)),
            node,
            ptr,
            None,
        )?;
        let write = |t: &mut BTree, n: u32, ks: &[u64], cs: &[u32]| {
            t.inner_count[n as usize] = ks.len() as u16;
            t.inner_keys[n as usize * (f - 1)..][..ks.len()].copy_from_slice(ks);
            t.inner_kids[n as usize * f..][..cs.len()].copy_from_slice(cs);
        };
        e.store_dep(self.inners.at(node, COUNT), 8, ptr)?;
        match sibling {
            None => {
                write(self, node, &keys, &kids);
                Ok(())
            }
            Some(r) => {
                write(self, node, &keys[..stay], &kids[..=stay]);
                write(self, r, &keys[stay + 1..], &kids[stay + 1..]);
                e.store(self.inners.at(r, COUNT), 8)?;
                self.insert_up(e, depth - 1, keys[stay], r)
            }
        }
    }

    /// Emit the loads and stores that rearrange `len` slots of node `old` (pointer load `ptr`):
    /// slot `i` of the new sequence comes from old slot `src(i)` (`None`: the new element) and
    /// goes to `dest(i)` = (`None` for `old` or `Some(sibling)`, slot). Slots already in place
    /// are not touched; `skip` is a slot that goes nowhere (the key a split moves up).
    #[allow(clippy::too_many_arguments)]
    fn emit_moves(
        &self,
        e: &mut Emitter,
        len: usize,
        src: impl Fn(usize) -> Option<usize>,
        dest: impl Fn(usize) -> (Option<u32>, usize),
        addr: impl Fn(&BTree, u32, usize) -> VirtAddr,
        old: u32,
        ptr: RecId,
        skip: Option<usize>,
    ) -> std::result::Result<(), Stop> {
        // Right to left, as memmove to higher addresses does.
        for i in (0..len).rev() {
            if skip == Some(i) {
                continue;
            }
            let (to, slot) = dest(i);
            if to.is_none() && src(i) == Some(slot) {
                continue;
            }
            if let Some(from) = src(i) {
                e.load_dep(addr(self, old, from), 8, ptr)?;
            }
            match to {
                None => e.store_dep(addr(self, old, slot), 8, ptr)?,
                Some(sib) => e.store(addr(self, sib, slot), 8)?,
            };
        }
        Ok(())
    }
}

impl IndexStructure for BTree {
    fn lookup(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let p = self.search(e, key)?;
        if p.found {
            e.load_dep(
                self.leaves.at(p.leaf, self.shape.leaf_value(p.pos)),
                8,
                p.ptr,
            )?;
        }
        Ok(p.found)
    }

    fn insert(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let p = self.search(e, key)?;
        if p.found {
            return Ok(false);
        }
        let s = self.shape;
        let f = s.f as usize;
        let mut keys = self.leaf(p.leaf).to_vec();
        keys.insert(p.pos, key);
        let (stay, sibling) = if keys.len() <= f {
            (keys.len(), None)
        } else {
            (keys.len() / 2, Some(self.new_leaf()?))
        };
        let src = |i: usize| (i != p.pos).then(|| if i < p.pos { i } else { i - 1 });
        let dest = |i: usize| {
            if i < stay {
                (None, i)
            } else {
                (sibling, i - stay)
            }
        };
        e.instr(6);
        for field in [
            Shape::leaf_key as fn(Shape, usize) -> u64,
            Shape::leaf_value,
        ] {
            self.emit_moves(
                e,
                keys.len(),
                src,
                dest,
                |t, n, i| t.leaves.at(n, field(s, i)),
                p.leaf,
                p.ptr,
                None,
            )?;
        }
        e.store_dep(self.leaves.at(p.leaf, COUNT), 8, p.ptr)?;
        let l = p.leaf as usize;
        self.leaf_count[l] = stay as u16;
        self.leaf_keys[l * f..][..stay].copy_from_slice(&keys[..stay]);
        if let Some(r) = sibling {
            let moved = &keys[stay..];
            self.leaf_count[r as usize] = moved.len() as u16;
            self.leaf_keys[r as usize * f..][..moved.len()].copy_from_slice(moved);
            // Link the new leaf into the leaf chain after the old one.
            e.load_dep(self.leaves.at(p.leaf, NEXT_LEAF), 8, p.ptr)?;
            e.store(self.leaves.at(r, NEXT_LEAF), 8)?;
            e.store(self.leaves.at(r, COUNT), 8)?;
            e.store_dep(self.leaves.at(p.leaf, NEXT_LEAF), 8, p.ptr)?;
            let depth = self.path.len();
            self.insert_up(e, depth, keys[stay], r)?;
        }
        Ok(true)
    }

    fn remove(&mut self, e: &mut Emitter, key: u64) -> std::result::Result<bool, Stop> {
        let p = self.search(e, key)?;
        if !p.found {
            return Ok(false);
        }
        let s = self.shape;
        let count = self.leaf_count[p.leaf as usize] as usize;
        for i in p.pos + 1..count {
            for field in [
                Shape::leaf_key as fn(Shape, usize) -> u64,
                Shape::leaf_value,
            ] {
                e.load_dep(self.leaves.at(p.leaf, field(s, i)), 8, p.ptr)?;
                e.store_dep(self.leaves.at(p.leaf, field(s, i - 1)), 8, p.ptr)?;
            }
        }
        e.store_dep(self.leaves.at(p.leaf, COUNT), 8, p.ptr)?;
        let base = p.leaf as usize * s.f as usize;
        self.leaf_keys
            .copy_within(base + p.pos + 1..base + count, base + p.pos);
        self.leaf_count[p.leaf as usize] -= 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;
    use crate::workload::testutil::{self, addrs};

    fn tiny(keys: u64, fanout: u64, updates: bool) -> (BTree, KeySpace) {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let shape = Shape { f: fanout };
        let mix_keys = if updates { 2 * keys } else { keys };
        let (leaves, inner) = shape.capacity(mix_keys, if updates { fanout / 2 } else { fanout });
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let root_ptr = heap.alloc(&mut os, 8, 8).unwrap();
        let lp = NodePool::new(&mut heap, &mut os, leaves, shape.leaf_bytes()).unwrap();
        let ip = NodePool::new(&mut heap, &mut os, inner + 1, shape.inner_bytes()).unwrap();
        let ks = KeySpace::new(keys, &mut Rng::new(17, WORKLOAD));
        (BTree::bulk_load(shape, root_ptr, lp, ip, &ks), ks)
    }

    /// Every key of the subtree at `node` (`depth` inner levels above its leaves), checking
    /// the separators bound each child.
    fn collect(t: &BTree, node: u32, depth: u32, lo: u64, hi: u64, out: &mut Vec<u64>) {
        if depth == 0 {
            let keys = t.leaf(node);
            assert!(keys.iter().all(|&k| lo <= k && k < hi));
            out.extend_from_slice(keys);
            return;
        }
        let keys = t.inner(node);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        for i in 0..=keys.len() {
            let l = if i == 0 { lo } else { keys[i - 1] };
            let h = if i == keys.len() { hi } else { keys[i] };
            collect(t, t.kid(node, i), depth - 1, l, h, out);
        }
    }

    /// Reference: which node each level visits (a scan for the first separator above the key)
    /// and which key slots a textbook binary search probes there.
    fn reference_lookup(t: &BTree, key: u64) -> Vec<u64> {
        let s = t.shape;
        let probes = |keys: &[u64], go_right: &dyn Fn(u64) -> bool| {
            let (mut lo, mut hi, mut out) = (0, keys.len(), Vec::new());
            while lo < hi {
                let mid = (lo + hi) / 2;
                out.push(mid);
                if go_right(keys[mid]) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out
        };
        let mut out = vec![t.root_ptr.0];
        let mut node = t.root;
        for _ in 0..t.height {
            let keys = t.inner(node);
            let base = t.inners.at(node, 0).0;
            out.push(base);
            out.extend(
                probes(keys, &|k| k <= key)
                    .iter()
                    .map(|&i| base + s.inner_key(i)),
            );
            let child = keys.iter().position(|&k| k > key).unwrap_or(keys.len());
            out.push(base + s.inner_kid(child));
            node = t.kid(node, child);
        }
        let keys = t.leaf(node);
        let base = t.leaves.at(node, 0).0;
        out.push(base);
        out.extend(
            probes(keys, &|k| k < key)
                .iter()
                .map(|&i| base + s.leaf_key(i)),
        );
        if let Some(i) = keys.iter().position(|&k| k == key) {
            out.push(base + s.leaf_value(i));
        }
        out
    }

    #[test]
    fn bulk_load_holds_every_key_in_order() {
        let (t, ks) = tiny(1000, 4, false);
        assert_eq!(t.height, 4); // 250 leaves, 63, 16, 4, 1 inner nodes
        let mut keys = Vec::new();
        collect(&t, t.root, t.height, 0, u64::MAX, &mut keys);
        assert_eq!(keys, (0..ks.n).map(|i| ks.initial(i)).collect::<Vec<_>>());
    }

    #[test]
    fn lookup_reads_exactly_the_root_to_leaf_path() {
        for fanout in [4, 5, 16] {
            let (t, ks) = tiny(150, fanout, false);
            for key in 0..ks.universe() + 2 {
                let mut tt = t.clone();
                let recs = testutil::run(move |e| tt.lookup(e, key).map(|_| ()));
                assert_eq!(
                    addrs(&recs),
                    reference_lookup(&t, key),
                    "fanout {fanout} key {key}"
                );
                assert_eq!(recs[0].dep, 0);
                assert!(recs[1..].iter().all(|r| r.dep >= 1));
            }
        }
    }

    #[test]
    fn updates_keep_the_tree_valid() {
        for fanout in [4, 7, 16] {
            let (t, ks) = tiny(300, fanout, true);
            let initial: Vec<u64> = (0..ks.n).map(|i| ks.initial(i)).collect();
            testutil::check_against_set(t.clone(), initial.clone(), ks.universe(), 4000, fanout);
            // Inserting every key of the universe splits up to a new root; the order survives.
            let mut grown = t.clone();
            let universe = ks.universe();
            testutil::run(move |e| {
                for k in (0..universe).rev() {
                    grown.insert(e, k)?;
                }
                let mut keys = Vec::new();
                collect(&grown, grown.root, grown.height, 0, u64::MAX, &mut keys);
                assert_eq!(keys, (0..universe).collect::<Vec<_>>());
                assert!(grown.height > t.height || fanout == 16);
                Ok(())
            });
        }
    }

    #[test]
    fn insert_into_a_leaf_with_room_shifts_the_larger_keys() {
        let (mut t, _) = tiny(10, 4, true);
        let first = t.leaf(0).to_vec();
        assert_eq!(first.len(), 4);
        let recs = testutil::run(move |e| {
            // The last slot: only the count changes.
            t.remove(e, first[3])?;
            // A middle slot: the key and value of slot 2 move to slot 1, then the count.
            t.remove(e, first[1])?;
            // Back in: slot 1 moves to slot 2, the new key and value go to slot 1, the count.
            t.insert(e, first[1])?;
            assert_eq!(t.leaf(0), &first[..3]);
            Ok(())
        });
        let stores = recs
            .iter()
            .filter(|r| r.op == crate::trace::Op::Store)
            .count();
        assert_eq!(stores, 1 + (2 + 1) + (2 + 2 + 1), "{recs:?}");
    }

    #[test]
    fn leaf_split_moves_the_upper_half_and_adds_a_separator() {
        let (mut t, _) = tiny(8, 4, true);
        assert_eq!((t.height, t.inner(t.root).len()), (1, 1));
        let first = t.leaf(0).to_vec();
        let right = t.leaf(1)[0];
        // The absent twin of the second key falls inside the full first leaf.
        let key = first[1] ^ 1;
        let mut merged = first.clone();
        merged.push(key);
        merged.sort();
        let (leaves, inners) = (t.leaves.clone(), t.inners.clone());
        let root = t.root;
        let recs = testutil::run(move |e| {
            assert!(t.insert(e, key)?);
            assert_eq!(t.leaf(0), &merged[..2]);
            assert_eq!(t.leaf(2), &merged[2..]);
            assert_eq!(t.inner(t.root), &[merged[2], right]);
            assert_eq!((t.kid(root, 0), t.kid(root, 1), t.kid(root, 2)), (0, 2, 1));
            Ok(())
        });
        let stores_in = |pool: &NodePool, n: u32| {
            let lo = pool.at(n, 0).0;
            let hi = lo + pool.array.elem;
            recs.iter()
                .filter(|r| r.op == crate::trace::Op::Store && (lo..hi).contains(&r.vaddr.0))
                .count()
        };
        // New leaf: three keys, three values, its next pointer and count.
        assert_eq!(stores_in(&leaves, 2), 8);
        // Root: the old separator and the old right child shift up a slot, the new separator and
        // child go in, and the count.
        assert_eq!(stores_in(&inners, root), 5);
    }

    #[test]
    fn same_seed_same_stream_and_large_default_footprint() {
        let cfg = BtreeConfig {
            keys: 5000,
            fanout: 8,
            update_ratio: 0.3,
            zipf_alpha: 0.9,
            references: 40_000,
            populate: true,
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

        let c: BtreeConfig = toml::from_str("populate = false").unwrap();
        c.validate("workload").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        drop(build(&c, &mut os, pid, 1).unwrap());
        assert!(testutil::footprint(&os, pid) >= 256 << 20);
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let c: BtreeConfig = toml::from_str("fanout = 2").unwrap();
        let msg = c.validate("workload").unwrap_err().to_string();
        assert!(msg.contains("workload.fanout"), "{msg}");
        let c: BtreeConfig = toml::from_str("references = 0").unwrap();
        assert!(c
            .validate("w")
            .unwrap_err()
            .to_string()
            .contains("w.references"));
        assert!(toml::from_str::<BtreeConfig>("fan_out = 8").is_err());
    }
}
