//! `sssp`: single-source shortest paths by Dijkstra's algorithm with an indexed binary min-heap
//! (decrease-key) in simulated memory, over edge weights in 1..=255 (GraphBIG's SSSP and the
//! Graph500 kernel 3 use weighted edges). The heap array, the position of each vertex in it and
//! the distances are all simulated arrays, so heap sifts show up as dependent loads. Restarts
//! from a new seeded source when the search finishes.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, RecId, ThreadedSource};

kernel_config! {
    /// `[workload] name = "sssp"`.
    SsspConfig {}
}

/// `dist[v]` of a vertex not reached yet.
pub const UNREACHED: u64 = u64::MAX;
/// `pos[v]` of a vertex not in the heap.
const NOT_QUEUED: u32 = u32::MAX;

/// Simulated property arrays: `dist` (u64 per vertex), `heap` (vertex ids, u32) and `pos`
/// (each vertex's heap slot, u32).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub dist: Array,
    pub heap: Array,
    pub pos: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            dist: s.per_vertex(8)?,
            heap: s.per_vertex(4)?,
            pos: s.per_vertex(4)?,
        })
    }
}

impl SsspConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.keys().validate(path)
    }

    pub fn build(&self, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<ThreadedSource> {
        let keys = self.keys();
        start(
            GraphSource::kronecker(&keys),
            &keys,
            true,
            os,
            pid,
            seed,
            Props::alloc,
            |e, g, p, rng| loop {
                let source = g.pick_root(rng);
                shortest_paths(e, g, &p, source)?;
            },
        )
        .map(ThreadedSource::marks_roi)
    }
}

/// The indexed min-heap keyed by `dist`, mirrored on the host; every step emits its accesses.
struct Heap<'a> {
    p: &'a Props,
    slots: Vec<u32>,
    pos: Vec<u32>,
    len: usize,
}

impl Heap<'_> {
    /// Move `v` up from slot `i` until its parent is not farther.
    fn sift_up(&mut self, e: &mut Emitter, dist: &[u64], mut i: usize, v: u32) -> Emit<()> {
        let key = dist[v as usize];
        while i > 0 {
            e.instr(2);
            let parent = (i - 1) / 2;
            let slot = self.p.heap.load(e, parent as u64, None)?;
            let pv = self.slots[parent];
            self.p.dist.load(e, pv as u64, Some(slot))?;
            e.instr(1);
            if dist[pv as usize] <= key {
                break;
            }
            self.put(e, i, pv, Some(slot))?;
            i = parent;
        }
        self.put(e, i, v, None)
    }

    /// Move `v` down from slot `i` until no child is nearer.
    fn sift_down(&mut self, e: &mut Emitter, dist: &[u64], mut i: usize, v: u32) -> Emit<()> {
        let key = dist[v as usize];
        loop {
            e.instr(2);
            let left = 2 * i + 1;
            if left >= self.len {
                break;
            }
            let mut child = left;
            let mut child_load = self.p.heap.load(e, left as u64, None)?;
            self.p
                .dist
                .load(e, self.slots[left] as u64, Some(child_load))?;
            if left + 1 < self.len {
                let right_load = self.p.heap.load(e, left as u64 + 1, None)?;
                let right = self.slots[left + 1];
                self.p.dist.load(e, right as u64, Some(right_load))?;
                e.instr(2);
                if dist[right as usize] < dist[self.slots[left] as usize] {
                    child = left + 1;
                    child_load = right_load;
                }
            }
            let cv = self.slots[child];
            e.instr(1);
            if dist[cv as usize] >= key {
                break;
            }
            self.put(e, i, cv, Some(child_load))?;
            i = child;
        }
        self.put(e, i, v, None)
    }

    /// `heap[i] = v; pos[v] = i` (`on`: the load `v` came from).
    fn put(&mut self, e: &mut Emitter, i: usize, v: u32, on: Option<RecId>) -> Emit<()> {
        self.slots[i] = v;
        self.p.heap.store(e, i as u64, None)?;
        self.pos[v as usize] = i as u32;
        self.p.pos.store(e, v as u64, on)?;
        Ok(())
    }

    fn push(&mut self, e: &mut Emitter, dist: &[u64], v: u32) -> Emit<()> {
        self.len += 1;
        self.sift_up(e, dist, self.len - 1, v)
    }

    /// Remove the nearest vertex; returns it and the load of `heap[0]` that produced it.
    fn pop(&mut self, e: &mut Emitter, dist: &[u64]) -> Emit<(u32, RecId)> {
        e.instr(2);
        let top_load = self.p.heap.load(e, 0, None)?;
        let top = self.slots[0];
        self.len -= 1;
        if self.len > 0 {
            self.p.heap.load(e, self.len as u64, None)?;
            let last = self.slots[self.len];
            self.sift_down(e, dist, 0, last)?;
        }
        Ok((top, top_load))
    }
}

/// Dijkstra from `source`; returns the distance of every vertex.
pub(crate) fn shortest_paths(e: &mut Emitter, g: &Graph, p: &Props, source: u32) -> Emit<Vec<u64>> {
    let n = g.vertices() as usize;
    let mut dist = vec![UNREACHED; n];
    let mut heap = Heap {
        p,
        slots: vec![0; n],
        pos: vec![NOT_QUEUED; n],
        len: 0,
    };
    for v in 0..n as u64 {
        e.instr(2);
        p.dist.store(e, v, None)?;
        p.pos.store(e, v, None)?;
    }
    // GraphBIG sets every distance when it loads the graph and resets them between runs,
    // outside its timer, which starts with the source's distance: the first search's
    // initialisation is set-up (later searches' marks are ignored).
    e.roi();
    e.instr(2);
    dist[source as usize] = 0;
    p.dist.store(e, source as u64, None)?;
    heap.push(e, &dist, source)?;
    while heap.len > 0 {
        let (u, popped) = heap.pop(e, &dist)?;
        p.dist.load(e, u as u64, Some(popped))?;
        let du = dist[u as usize];
        let (row, bounds) = g.row(e, u, Some(popped))?;
        for i in row {
            e.instr(2);
            let (w, nb) = g.neighbour(e, i, bounds)?;
            let weight = g.weight(e, u, i, bounds)?;
            p.dist.load(e, w as u64, Some(nb))?;
            e.instr(2);
            let candidate = du + weight as u64;
            if candidate < dist[w as usize] {
                dist[w as usize] = candidate;
                p.dist.store(e, w as u64, Some(nb))?;
                p.pos.load(e, w as u64, Some(nb))?;
                e.instr(1);
                match heap.pos[w as usize] {
                    NOT_QUEUED => heap.push(e, &dist, w)?,
                    slot => heap.sift_up(e, &dist, slot as usize, w)?,
                }
            }
        }
    }
    Ok(dist)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{rmat::edge_weight, Csr};
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Textbook Dijkstra with lazy deletion over the same weights.
    fn reference(g: &Csr, source: u32, salt: u64) -> Vec<u64> {
        let mut dist = vec![UNREACHED; g.vertices() as usize];
        let mut q = BinaryHeap::from([Reverse((0u64, source))]);
        dist[source as usize] = 0;
        while let Some(Reverse((d, u))) = q.pop() {
            if d > dist[u as usize] {
                continue;
            }
            for &w in g.neighbours(u) {
                let nd = d + edge_weight(u, w, salt) as u64;
                if nd < dist[w as usize] {
                    dist[w as usize] = nd;
                    q.push(Reverse((nd, w)));
                }
            }
        }
        dist
    }

    #[test]
    fn distances_equal_reference_dijkstra() {
        let csr = Csr::rmat(10, 8, 4);
        let source = (0..csr.vertices()).find(|&v| csr.degree(v) > 0).unwrap();
        let (recs, (_, _, weights), p, (dist, salt)) =
            run_once(csr.clone(), true, Props::alloc, move |e, g, p| {
                Ok((shortest_paths(e, g, p, source)?, g.salt))
            });
        assert_eq!(dist, reference(&csr, source, salt));
        assert!(dist.iter().filter(|&&d| d != UNREACHED).count() > 100);
        // Every edge of every reached vertex has its weight read once.
        let reached: u64 = (0..csr.vertices())
            .filter(|&v| dist[v as usize] != UNREACHED)
            .map(|v| csr.degree(v))
            .sum();
        assert_eq!(accesses(&recs, &weights.unwrap()).len() as u64, reached);
        assert!(!accesses(&recs, &p.heap).is_empty());
    }

    #[test]
    fn heap_sifts_on_a_tiny_graph() {
        // Star 0-{1,2,3}: the source pushes three vertices and pops them in distance order.
        let csr = Csr::from_edges(4, &[(0, 1), (0, 2), (0, 3)]);
        let (_, _, _, (dist, salt)) = run_once(csr.clone(), true, Props::alloc, |e, g, p| {
            Ok((shortest_paths(e, g, p, 0)?, g.salt))
        });
        for v in 1..4 {
            assert_eq!(dist[v as usize], edge_weight(0, v, salt) as u64);
        }
    }

    #[test]
    fn the_region_of_interest_begins_at_the_first_sources_distance() {
        use crate::trace::{Op, Roi};
        use crate::workload::WorkloadConfig;
        let c = SsspConfig {
            scale: 8,
            edge_factor: 4,
            references: 20_000,
            ..Default::default()
        };
        let (recs, roi, _, p) = run_with_roi(
            &WorkloadConfig::Sssp(c.clone()),
            &c.keys(),
            true,
            Props::alloc,
        );
        // Set-up: the distance and heap position of each of the 256 vertices.
        assert_eq!(roi, Roi::At(512));
        assert_initialise(&recs[..512], &[&p.dist, &p.pos]);
        // The search starts by setting the source's distance to 0.
        let first = accesses(&recs[512..513], &p.dist);
        assert!(matches!(first[..], [(Op::Store, _)]), "{first:?}");
    }
}
