//! `bfs`: GraphBIG's breadth-first search, queue-based and top-down (the Graph500 kernel 2
//! access pattern): pop a vertex, scan its neighbour row, and discover every neighbour whose
//! level is still unset. Restarts from a new seeded root when the search finishes.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};

kernel_config! {
    /// `[workload] name = "bfs"`.
    BfsConfig {}
}

/// `level[v]` of a vertex not reached yet.
pub const UNVISITED: u32 = u32::MAX;

/// Simulated property arrays: `level` (u32 per vertex) and the FIFO `queue` (u32 per vertex).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub level: Array,
    pub queue: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            level: s.per_vertex(4)?,
            queue: s.per_vertex(4)?,
        })
    }
}

impl BfsConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.keys().validate(path)
    }

    pub fn build(&self, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<ThreadedSource> {
        let keys = self.keys();
        start(
            GraphSource::kronecker(&keys),
            &keys,
            false,
            os,
            pid,
            seed,
            Props::alloc,
            |e, g, p, rng| loop {
                let root = g.pick_root(rng);
                search(e, g, &p, root)?;
            },
        )
    }
}

/// One search from `root`; returns the level of every vertex.
pub(crate) fn search(e: &mut Emitter, g: &Graph, p: &Props, root: u32) -> Emit<Vec<u32>> {
    let n = g.vertices();
    let mut level = vec![UNVISITED; n as usize];
    let mut queue = vec![0u32; n as usize];
    for v in 0..n as u64 {
        e.instr(2);
        p.level.store(e, v, None)?;
    }
    e.instr(2);
    level[root as usize] = 0;
    p.level.store(e, root as u64, None)?;
    queue[0] = root;
    p.queue.store(e, 0, None)?;
    let (mut head, mut tail) = (0usize, 1usize);
    while head < tail {
        e.instr(3);
        let popped = p.queue.load(e, head as u64, None)?;
        let v = queue[head];
        head += 1;
        p.level.load(e, v as u64, Some(popped))?;
        let next = level[v as usize] + 1;
        let (row, bounds) = g.row(e, v, Some(popped))?;
        for i in row {
            e.instr(2);
            let (w, nb) = g.neighbour(e, i, bounds)?;
            e.instr(1);
            p.level.load(e, w as u64, Some(nb))?;
            if level[w as usize] == UNVISITED {
                e.instr(2);
                level[w as usize] = next;
                p.level.store(e, w as u64, Some(nb))?;
                queue[tail] = w;
                p.queue.store(e, tail as u64, None)?;
                tail += 1;
            }
        }
    }
    Ok(level)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;
    use crate::trace::Op;
    use std::collections::VecDeque;

    /// Textbook BFS: the discovery order.
    fn reference_order(g: &Csr, root: u32) -> Vec<u32> {
        let mut seen = vec![false; g.vertices() as usize];
        let mut order = vec![root];
        let mut q = VecDeque::from([root]);
        seen[root as usize] = true;
        while let Some(v) = q.pop_front() {
            for &w in g.neighbours(v) {
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    order.push(w);
                    q.push_back(w);
                }
            }
        }
        order
    }

    #[test]
    fn level_stores_follow_reference_bfs_order() {
        let csr = Csr::rmat(9, 8, 3);
        let n = csr.vertices() as usize;
        let root = (0..csr.vertices()).find(|&v| csr.degree(v) > 0).unwrap();
        let expected = reference_order(&csr, root);
        let (recs, (offsets, neighbours, _), p, levels) =
            run_once(csr.clone(), false, Props::alloc, move |e, g, p| {
                search(e, g, p, root)
            });
        let level_stores: Vec<u32> = accesses(&recs, &p.level)
            .into_iter()
            .filter(|&(op, _)| op == Op::Store)
            .map(|(_, i)| i as u32)
            .collect();
        assert_eq!(level_stores[..n], (0..n as u32).collect::<Vec<_>>());
        assert_eq!(level_stores[n..], expected[..]);
        // Every neighbour of every reached vertex is read exactly once, in row order.
        let reached: u64 = expected.iter().map(|&v| csr.degree(v)).sum();
        assert_eq!(accesses(&recs, &neighbours).len() as u64, reached);
        assert_eq!(accesses(&recs, &offsets).len(), 2 * expected.len());
        assert_eq!(levels[root as usize], 0);
        for &v in &expected[1..] {
            let parent_level = csr.neighbours(v).iter().map(|&u| levels[u as usize]).min();
            assert_eq!(Some(levels[v as usize] - 1), parent_level);
        }
    }

    #[test]
    fn level_loads_depend_on_their_neighbour_load() {
        // Path 0-1-2.
        let csr = Csr::from_edges(3, &[(0, 1), (1, 2)]);
        let (recs, (_, neighbours, _), p, _) =
            run_once(csr, false, Props::alloc, |e, g, p| search(e, g, p, 0));
        for (k, r) in recs.iter().enumerate() {
            let in_level = r.vaddr.0 >= p.level.base.0 && r.vaddr.0 < p.level.base.0 + 12;
            if in_level && r.op == Op::Load && k > 0 {
                let prev = &recs[k - r.dep as usize];
                let from_neighbour = prev.vaddr.0 >= neighbours.base.0
                    && prev.vaddr.0 < neighbours.base.0 + neighbours.bytes();
                let from_queue = prev.vaddr.0 >= p.queue.base.0
                    && prev.vaddr.0 < p.queue.base.0 + p.queue.bytes();
                assert!(r.dep > 0 && (from_neighbour || from_queue), "record {k}");
            }
        }
    }
}
