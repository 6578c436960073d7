//! What `bst-int` and `bst-ext` share: the ASCYLIB node layout (key, value, left, right: 32
//! bytes), the host mirror of keys and child links, the root pointer in a global, and building
//! the start tree as random insertion would.
//!
//! Inserting keys in random order into a BST gives the treap whose priority is the insertion
//! time, so the start tree is built directly as that Cartesian tree over the sorted keys in O(n)
//! (a stack over the right spine) instead of n searches: the same shape, in milliseconds.

use super::emit::{Emitter, RecId, SimHeap, Stop};
use super::index::{load_after, store_after, NodePool, Permutation, NIL};
use crate::addr::VirtAddr;
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::rng::Rng;

pub(crate) const NODE_BYTES: u64 = 32;
pub(crate) const KEY: u64 = 0;
pub(crate) const VALUE: u64 = 8;
/// Offset of child pointer `dir` (0 = left, 1 = right).
const CHILD: [u64; 2] = [16, 24];

/// A binary tree of pool nodes mirrored on the host.
#[derive(Clone, Debug)]
pub(crate) struct BinaryNodes {
    pub pool: NodePool,
    /// The global holding the root pointer.
    pub root_ptr: VirtAddr,
    pub root: u32,
    /// Host-side contents of every node, key beside children: a search touches one host cache
    /// line per level, which keeps the generator well ahead of the simulator.
    pub nodes: Vec<HostNode>,
}

/// What the algorithm needs of a node on the host: its key and its two children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostNode {
    pub key: u64,
    pub kids: [u32; 2],
}

impl HostNode {
    pub const EMPTY: HostNode = HostNode {
        key: 0,
        kids: [NIL; 2],
    };
}

/// Where a pointer to a node is stored: a child slot of `parent`, or the root pointer
/// (`parent == NIL`); `on` is the load that produced `parent`'s address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    pub parent: u32,
    pub dir: usize,
    pub on: Option<RecId>,
}

impl BinaryNodes {
    /// Allocate the root pointer and a pool of `nodes` nodes.
    pub fn alloc(
        heap: &mut SimHeap,
        os: &mut dyn AddressSpaces,
        nodes: u64,
    ) -> Result<(VirtAddr, NodePool)> {
        let root_ptr = heap.alloc(os, 8, 8)?;
        Ok((root_ptr, NodePool::new(heap, os, nodes, NODE_BYTES)?))
    }

    pub fn empty(root_ptr: VirtAddr, pool: NodePool) -> BinaryNodes {
        BinaryNodes {
            pool,
            root_ptr,
            root: NIL,
            nodes: Vec::new(),
        }
    }

    pub fn addr(&self, n: u32, offset: u64) -> VirtAddr {
        self.pool.at(n, offset)
    }
    pub fn child_addr(&self, n: u32, dir: usize) -> VirtAddr {
        self.pool.at(n, CHILD[dir])
    }

    /// A fresh node holding `key` with no children (host side).
    pub fn new_node(&mut self, key: u64) -> std::result::Result<u32, Stop> {
        let n = self.pool.alloc()?;
        if n as usize >= self.nodes.len() {
            self.nodes.resize(n as usize + 1, HostNode::EMPTY);
        }
        self.nodes[n as usize] = HostNode {
            key,
            kids: [NIL; 2],
        };
        Ok(n)
    }

    /// Emit the stores that initialise node `n` (key, value, both children).
    pub fn store_node(&self, e: &mut Emitter, n: u32) -> std::result::Result<(), Stop> {
        for off in [KEY, VALUE, CHILD[0], CHILD[1]] {
            e.store(self.addr(n, off), 8)?;
        }
        Ok(())
    }

    /// Point `link` at `to`: host update and the store.
    pub fn relink(
        &mut self,
        e: &mut Emitter,
        link: Link,
        to: u32,
    ) -> std::result::Result<(), Stop> {
        if link.parent == NIL {
            self.root = to;
            e.store(self.root_ptr, 8)?;
        } else {
            self.nodes[link.parent as usize].kids[link.dir] = to;
            store_after(e, self.child_addr(link.parent, link.dir), link.on)?;
        }
        Ok(())
    }

    /// Load child pointer `dir` of `n`, whose address came from `on`.
    pub fn load_child(
        &self,
        e: &mut Emitter,
        n: u32,
        dir: usize,
        on: Option<RecId>,
    ) -> std::result::Result<RecId, Stop> {
        load_after(e, self.child_addr(n, dir), on)
    }
}

/// Insertion time of each of `n` sorted items under a random insertion order.
pub(crate) fn insertion_times(n: u64, rng: &mut Rng) -> Vec<u32> {
    let order = Permutation::new(n, rng);
    let mut time = vec![0u32; n as usize];
    for t in 0..n {
        time[order.apply(t) as usize] = t as u32;
    }
    time
}

/// The Cartesian tree (min-heap on `prio`, in order over positions `0..prio.len()`): per
/// position its `[left, right]` children as positions, and the root position.
pub(crate) fn cartesian_tree(prio: &[u32]) -> (Vec<[u32; 2]>, u32) {
    let mut kids = vec![[NIL; 2]; prio.len()];
    let mut spine: Vec<u32> = Vec::new();
    for i in 0..prio.len() as u32 {
        let mut last = NIL;
        while let Some(&top) = spine.last() {
            if prio[top as usize] < prio[i as usize] {
                break;
            }
            last = spine.pop().unwrap_or(NIL);
        }
        kids[i as usize][0] = last;
        if let Some(&top) = spine.last() {
            kids[top as usize][1] = i;
        }
        spine.push(i);
    }
    (kids, spine.first().copied().unwrap_or(NIL))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::stream::WORKLOAD;

    /// Insert `keys` one by one into a plain BST and return (root, children) by key.
    fn insert_all(keys: &[u64]) -> std::collections::BTreeMap<u64, [Option<u64>; 2]> {
        let mut tree = std::collections::BTreeMap::new();
        let root = keys[0];
        tree.insert(root, [None, None]);
        for &k in &keys[1..] {
            let mut cur = root;
            loop {
                let dir = usize::from(k > cur);
                let slot: &mut [Option<u64>; 2] = tree.get_mut(&cur).unwrap();
                match slot[dir] {
                    Some(c) => cur = c,
                    None => {
                        slot[dir] = Some(k);
                        break;
                    }
                }
            }
            tree.insert(k, [None, None]);
        }
        tree
    }

    #[test]
    fn cartesian_tree_is_the_random_insertion_tree() {
        let n = 500;
        let time = insertion_times(n, &mut Rng::new(4, WORKLOAD));
        let (kids, root) = cartesian_tree(&time);
        let mut order = vec![0u64; n as usize];
        for (i, &t) in time.iter().enumerate() {
            order[t as usize] = i as u64;
        }
        let reference = insert_all(&order);
        assert_eq!(root as u64, order[0]);
        for (i, k) in kids.iter().enumerate() {
            let want = reference[&(i as u64)];
            let got = k.map(|c| (c != NIL).then_some(c as u64));
            assert_eq!(got, want, "node {i}");
        }
    }

    /// Depth of the deepest node, for balance checks.
    pub fn height(nodes: &[HostNode], root: u32) -> u32 {
        if root == NIL {
            return 0;
        }
        let [l, r] = nodes[root as usize].kids;
        1 + height(nodes, l).max(height(nodes, r))
    }
}
