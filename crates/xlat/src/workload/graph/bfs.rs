//! `bfs`: GraphBIG's breadth-first search, queue-based and top-down (the Graph500 kernel 2
//! access pattern): pop a vertex, scan its neighbour row, and discover every neighbour whose
//! level is still unset. Restarts from a new seeded root when the search finishes.
//!
//! With `threads`, the search is level-synchronous, as parallel top-down BFS is (GAP's `TDStep`,
//! Graph500's OpenMP reference): each level's frontier, a run of the queue, is split among the
//! threads (OpenMP static schedule); each thread scans its part and appends what it discovers to
//! the next level's run of the queue, and all threads finish a level before any starts the
//! next. The queue is the one a single thread builds: each thread's discoveries land after those
//! of the threads that scan earlier parts of the frontier (per-thread queue buffers flushed in
//! thread order). A vertex that several threads find in the same level goes to the first in
//! frontier order (its compare-and-swap wins); the others see it visited. One thread is exactly
//! the sequential search.

use super::{kernel_config, start, Access, Adjacency, Emit, Graph, GraphKeys, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};
use std::ops::Range;
use std::sync::Mutex;

kernel_config! {
    /// `[workload] name = "bfs"`.
    BfsConfig {
        /// Software threads of the one process, each on its own core (1 to 64).
        threads: u32 = 1,
    }
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
    fn graph_keys(&self) -> GraphKeys {
        GraphKeys {
            threads: self.threads,
            ..self.keys()
        }
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        self.graph_keys().validate(path)
    }

    pub fn build(&self, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<ThreadedSource> {
        let keys = self.graph_keys();
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
        .map(ThreadedSource::marks_roi)
    }
}

/// The outcome of one search, computed on the host just ahead of the threads: which vertex each
/// queue slot holds, where each level's run of the queue starts, and which run of the queue each
/// slot's scan discovers. The threads only replay it. The plan is the sequential queue-based
/// search, advanced slot by slot as the threads reach the slots, so it never runs more than one
/// thread's part of a level ahead of the records (a run that stops early does not plan the rest
/// of a large level) and a single thread's row is still in its row cache when the thread emits
/// the scan.
struct Plan {
    queue: Vec<u32>,
    /// Level `l` is `queue[levels[l]..levels[l + 1]]`, for the levels whose run is known: a
    /// level's run is known once every slot of the level before it is scanned.
    levels: Vec<usize>,
    /// Slot `s`'s scan discovers the vertices in `queue[first[s]..first[s + 1]]`, in its row's
    /// order; one entry more than the slots scanned so far.
    first: Vec<u32>,
    level: Vec<u32>,
}

impl Plan {
    fn new(n: usize, root: u32) -> Plan {
        let mut level = vec![UNVISITED; n];
        level[root as usize] = 0;
        Plan {
            queue: vec![root],
            levels: vec![0, 1],
            first: vec![1],
            level,
        }
    }

    /// Slots whose scan is planned.
    fn scanned(&self) -> usize {
        self.first.len() - 1
    }

    /// Plan the scans of the slots before `to` (slots already in the queue).
    fn advance(&mut self, adj: &Adjacency, to: usize) {
        while self.scanned() < to {
            let slot = self.scanned();
            let v = self.queue[slot];
            let next = self.level[v as usize] + 1;
            let (level, queue) = (&mut self.level, &mut self.queue);
            adj.scan_row(v, |row| {
                for &w in row {
                    if level[w as usize] == UNVISITED {
                        level[w as usize] = next;
                        queue.push(w);
                    }
                }
            });
            self.first.push(self.queue.len() as u32);
            // The last known level is scanned: the queue now ends where the next level does
            // (unless it is empty, and the search over).
            let end = *self.levels.last().expect("level 0");
            if self.scanned() == end && self.queue.len() > end {
                self.levels.push(self.queue.len());
            }
        }
    }

    /// Level `l`'s run of the queue, planning the level before it to its end if needed; `None`
    /// when the search ends before level `l`.
    fn frontier(&mut self, adj: &Adjacency, l: usize) -> Option<Range<u64>> {
        if self.levels.len() < l + 2 {
            let start = self.levels[l];
            self.advance(adj, start);
        }
        (self.levels.len() >= l + 2).then(|| self.levels[l] as u64..self.levels[l + 1] as u64)
    }
}

/// One search from `root` by this thread (with the others of its team); returns the level of
/// every vertex.
pub(crate) fn search(e: &mut Emitter, g: &Graph, p: &Props, root: u32) -> Emit<Vec<u32>> {
    let n = g.vertices() as usize;
    let plan = e.share(|| Mutex::new(Plan::new(n, root)))?;
    // Every level starts unset: a parallel loop over the vertices.
    for v in e.static_share(0..g.vertices() as u64) {
        e.instr(2);
        p.level.store(e, v, None)?;
    }
    e.barrier()?;
    // GraphBIG sets every level when it loads the graph and resets them between runs, both
    // outside its timer, which starts with the root's level: the first search's initialisation
    // is set-up (every thread marks here, after the barrier; later searches' marks are ignored).
    e.roi();
    if e.thread() == 0 {
        e.instr(2);
        p.level.store(e, root as u64, None)?;
        p.queue.store(e, 0, None)?;
    }
    for l in 0.. {
        // The plan is locked only to read or extend it, never while this thread emits: another
        // thread may be waiting for the merged stream to read this thread's records.
        let frontier = plan.lock().expect("no thread panics").frontier(&g.adj, l);
        let Some(frontier) = frontier else {
            break;
        };
        let part = e.static_share(frontier);
        scan(e, g, p, &plan, part)?;
        e.barrier()?;
    }
    let level = plan.lock().expect("no thread panics").level.clone();
    Ok(level)
}

/// Scan this thread's part of a level: pop each vertex, read its row, and claim the neighbours
/// the plan says this scan discovers.
fn scan(e: &mut Emitter, g: &Graph, p: &Props, plan: &Mutex<Plan>, part: Range<u64>) -> Emit<()> {
    let mut discovered = Vec::new();
    for slot in part {
        // The vertex in this slot and what its scan discovers, in row order, at which slots of
        // the queue: this thread's discoveries follow those of the scans before it.
        let (v, mut tail) = {
            let mut plan = plan.lock().expect("no thread panics");
            let s = slot as usize;
            plan.advance(&g.adj, s + 1);
            let run = plan.first[s] as usize..plan.first[s + 1] as usize;
            discovered.clear();
            discovered.extend_from_slice(&plan.queue[run.clone()]);
            (plan.queue[s], run.start as u64)
        };
        e.instr(3);
        let popped = p.queue.load(e, slot, None)?;
        p.level.load(e, v as u64, Some(popped))?;
        let (row, bounds) = g.row(e, v, Some(popped))?;
        // Each discovered vertex is claimed at its first entry in the row: a duplicate entry
        // (the implicit graph keeps them) finds it visited.
        let mut claims = discovered.iter().peekable();
        for i in row {
            e.instr(2);
            let (w, nb) = g.neighbour(e, i, bounds)?;
            e.instr(1);
            p.level.load(e, w as u64, Some(nb))?;
            if claims.next_if_eq(&&w).is_some() {
                e.instr(2);
                p.level.store(e, w as u64, Some(nb))?;
                p.queue.store(e, tail, None)?;
                tail += 1;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;
    use crate::trace::Op;
    use crate::workload::emit::TURN;
    use crate::workload::testutil::{max_lead, per_core};
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
    fn on_the_implicit_graph_the_search_follows_its_rows_at_their_csr_addresses() {
        use super::super::{GraphKind, Implicit};
        use crate::rng::{self, Rng};
        use crate::trace::Roi;
        use crate::workload::WorkloadConfig;
        let c = BfsConfig {
            scale: 10,
            edge_factor: 8,
            references: 200_000,
            graph: GraphKind::Implicit,
            ..Default::default()
        };
        let (recs, roi, (offsets, neighbours, _), p) = run_with_roi(
            &WorkloadConfig::Bfs(c.clone()),
            &c.keys(),
            false,
            Props::alloc,
        );
        // The graph and the first root, drawn as the run draws them (seed 7).
        let mut seeds = Rng::new(7, rng::stream::WORKLOAD);
        let g = Implicit::new(10, 8, seeds.next_u64());
        seeds.next_u64();
        let mut roots = Rng::new(seeds.next_u64(), 0);
        let root = (0..64)
            .map(|_| roots.below(1024) as u32)
            .find(|&v| g.degree(v) > 0)
            .unwrap();
        // Reference BFS over the implicit rows.
        let mut seen = vec![false; 1024];
        let (mut order, mut q) = (vec![root], VecDeque::from([root]));
        seen[root as usize] = true;
        while let Some(v) = q.pop_front() {
            for w in g.neighbours(v) {
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    order.push(w);
                    q.push_back(w);
                }
            }
        }
        let Roi::At(start) = roi else {
            panic!("no roi")
        };
        let run = &recs[start as usize..];
        let stores: Vec<u32> = accesses(run, &p.level)
            .into_iter()
            .filter(|&(op, _)| op == Op::Store)
            .map(|(_, i)| i as u32)
            .collect();
        assert_eq!(stores[..order.len()], order[..]);
        // Each popped vertex's row bounds, then its entries, at the CSR's addresses.
        let want: Vec<u64> = order.iter().flat_map(|&v| g.row(v)).collect();
        let got: Vec<u64> = accesses(run, &neighbours)
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        assert_eq!(got[..want.len()], want[..]);
        let bounds: Vec<u64> = order
            .iter()
            .flat_map(|&v| [v as u64, v as u64 + 1])
            .collect();
        let got: Vec<u64> = accesses(run, &offsets)
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        assert_eq!(got[..bounds.len()], bounds[..]);
    }

    #[test]
    fn a_team_searches_level_by_level_and_does_the_sequential_work() {
        let csr = Csr::rmat(9, 8, 3);
        let root = (0..csr.vertices()).find(|&v| csr.degree(v) > 0).unwrap();
        let kernel = move |e: &mut Emitter, g: &Graph, p: &Props| Ok((search(e, g, p, root)?, *p));
        let (alone, _, (levels, _)) = run_team(csr.clone(), 1, Props::alloc, kernel);
        let (team, barriers, (team_levels, p)) = run_team(csr, 4, Props::alloc, kernel);
        assert_eq!(team_levels, levels);
        // The same loads and stores, with the same instruction counts and dependences: the
        // threads split the sequential search's work without changing it.
        assert_eq!(work(&team), work(&alone));
        assert_eq!(per_core(&team).len(), 4);
        // Level-synchronous: the queue slots popped never go back to an earlier level.
        let mut first_slot = vec![0u64];
        for l in 0.. {
            let at_level = levels.iter().filter(|&&x| x == l).count() as u64;
            if at_level == 0 {
                break;
            }
            first_slot.push(first_slot.last().unwrap() + at_level);
        }
        let level_of_slot = |s: u64| first_slot.partition_point(|&f| f <= s) - 1;
        let popped: Vec<usize> = accesses(&team, &p.queue)
            .into_iter()
            .filter(|&(op, _)| op == Op::Load)
            .map(|(_, slot)| level_of_slot(slot))
            .collect();
        assert!(popped.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(popped.last(), Some(&(first_slot.len() - 2)));
        // Between barriers the threads' records interleave closely.
        assert!(max_lead(&team, &barriers) <= TURN as u64);
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

    #[test]
    fn the_region_of_interest_begins_at_the_first_searchs_root() {
        use crate::trace::Roi;
        use crate::workload::WorkloadConfig;
        for threads in [1, 3] {
            let c = BfsConfig {
                scale: 8,
                edge_factor: 4,
                references: 20_000,
                threads,
                ..Default::default()
            };
            let (recs, roi, _, p) = run_with_roi(
                &WorkloadConfig::Bfs(c.clone()),
                &c.keys(),
                false,
                Props::alloc,
            );
            // Set-up: the level of each of the 256 vertices, split among the threads.
            assert_eq!(roi, Roi::At(256), "threads {threads}");
            assert_initialise(&recs[..256], &[&p.level]);
            // The search itself starts with thread 0 setting the root's level and queueing it.
            let first: Vec<_> = recs[256..258].iter().map(|r| (r.core, r.op)).collect();
            assert_eq!(first, [(0, Op::Store); 2], "threads {threads}");
            assert_eq!(accesses(&recs[256..257], &p.level).len(), 1);
            assert_eq!(accesses(&recs[257..258], &p.queue), [(Op::Store, 0)]);
        }
    }
}
