//! `bc`: betweenness centrality by Brandes' algorithm (GraphBIG's BC kernel), from `sources`
//! seeded roots: per root a BFS that counts shortest paths (`sigma`) and records the visit
//! order, then a reverse sweep over that order accumulating dependencies (`delta`) into the
//! centrality (`bc`). Scores of the undirected graph count each pair once per direction. After
//! `sources` roots the scores are zeroed and a new batch of roots starts.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::rng::Rng;
use crate::workload::emit::{Array, Emitter, ThreadedSource};
use crate::workload::nonzero;

kernel_config! {
    /// `[workload] name = "bc"`.
    BcConfig {
        /// Roots per batch (Brandes from every vertex is exact; a sample approximates).
        sources: u32 = 4,
    }
}

const UNVISITED: u32 = u32::MAX;

/// Simulated property arrays: `depth` (u32), `sigma`, `delta`, `bc` (f64) per vertex and the
/// BFS `queue` (u32 per vertex), which the reverse sweep reads backwards as Brandes' stack.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub depth: Array,
    pub sigma: Array,
    pub delta: Array,
    pub bc: Array,
    pub queue: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            depth: s.per_vertex(4)?,
            sigma: s.per_vertex(8)?,
            delta: s.per_vertex(8)?,
            bc: s.per_vertex(8)?,
            queue: s.per_vertex(4)?,
        })
    }
}

impl BcConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        self.keys().validate(path)?;
        nonzero(format!("{path}.sources"), self.sources as u64)
    }

    pub fn build(&self, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<ThreadedSource> {
        let keys = self.keys();
        let sources = self.sources;
        start(
            GraphSource::kronecker(&keys),
            &keys,
            false,
            os,
            pid,
            seed,
            Props::alloc,
            move |e, g, p, rng: &mut Rng| loop {
                let roots: Vec<u32> = (0..sources).map(|_| g.pick_root(rng)).collect();
                centrality(e, g, &p, &roots)?;
            },
        )
        .map(ThreadedSource::marks_roi)
    }
}

/// Per-vertex state of one Brandes pass, mirrored on the host.
struct Pass {
    depth: Vec<u32>,
    sigma: Vec<f64>,
    delta: Vec<f64>,
    order: Vec<u32>,
}

/// Betweenness from `roots`; returns the scores.
pub(crate) fn centrality(e: &mut Emitter, g: &Graph, p: &Props, roots: &[u32]) -> Emit<Vec<f64>> {
    let n = g.vertices() as usize;
    let mut bc = vec![0.0f64; n];
    for v in 0..n as u64 {
        e.instr(2);
        p.bc.store(e, v, None)?;
    }
    // GraphBIG zeroes the scores when it loads the graph and between runs, outside its timer;
    // each root's reset of depths, path counts and dependencies is inside it (Brandes' algorithm
    // needs it). So the first run's zeroing is set-up (later runs' marks are ignored).
    e.roi();
    let mut pass = Pass {
        depth: vec![UNVISITED; n],
        sigma: vec![0.0; n],
        delta: vec![0.0; n],
        order: Vec::with_capacity(n),
    };
    for &root in roots {
        count_paths(e, g, p, root, &mut pass)?;
        accumulate(e, g, p, root, &pass, &mut bc)?;
    }
    Ok(bc)
}

/// The forward BFS: depths, shortest-path counts and the visit order.
fn count_paths(e: &mut Emitter, g: &Graph, p: &Props, root: u32, s: &mut Pass) -> Emit<()> {
    for v in 0..g.vertices() as u64 {
        e.instr(2);
        p.depth.store(e, v, None)?;
        p.sigma.store(e, v, None)?;
        p.delta.store(e, v, None)?;
    }
    s.depth.fill(UNVISITED);
    s.sigma.fill(0.0);
    s.delta.fill(0.0);
    s.order.clear();
    e.instr(2);
    s.depth[root as usize] = 0;
    p.depth.store(e, root as u64, None)?;
    s.sigma[root as usize] = 1.0;
    p.sigma.store(e, root as u64, None)?;
    s.order.push(root);
    p.queue.store(e, 0, None)?;
    let mut head = 0;
    while head < s.order.len() {
        e.instr(3);
        let popped = p.queue.load(e, head as u64, None)?;
        let v = s.order[head];
        head += 1;
        p.depth.load(e, v as u64, Some(popped))?;
        p.sigma.load(e, v as u64, Some(popped))?;
        let next = s.depth[v as usize] + 1;
        let (row, bounds) = g.row(e, v, Some(popped))?;
        for i in row {
            e.instr(2);
            let (w, nb) = g.neighbour(e, i, bounds)?;
            p.depth.load(e, w as u64, Some(nb))?;
            e.instr(1);
            if s.depth[w as usize] == UNVISITED {
                s.depth[w as usize] = next;
                p.depth.store(e, w as u64, Some(nb))?;
                p.queue.store(e, s.order.len() as u64, None)?;
                s.order.push(w);
            }
            if s.depth[w as usize] == next {
                p.sigma.load(e, w as u64, Some(nb))?;
                e.instr(1);
                s.sigma[w as usize] += s.sigma[v as usize];
                p.sigma.store(e, w as u64, Some(nb))?;
            }
        }
    }
    Ok(())
}

/// The reverse sweep: push each vertex's dependency to its predecessors, then add it to `bc`.
fn accumulate(
    e: &mut Emitter,
    g: &Graph,
    p: &Props,
    root: u32,
    s: &Pass,
    bc: &mut [f64],
) -> Emit<()> {
    let mut delta = s.delta.clone();
    for k in (0..s.order.len()).rev() {
        e.instr(3);
        let popped = p.queue.load(e, k as u64, None)?;
        let w = s.order[k];
        p.depth.load(e, w as u64, Some(popped))?;
        p.sigma.load(e, w as u64, Some(popped))?;
        p.delta.load(e, w as u64, Some(popped))?;
        let share = (1.0 + delta[w as usize]) / s.sigma[w as usize];
        let (row, bounds) = g.row(e, w, Some(popped))?;
        for i in row {
            e.instr(2);
            let (v, nb) = g.neighbour(e, i, bounds)?;
            p.depth.load(e, v as u64, Some(nb))?;
            e.instr(1);
            if s.depth[v as usize].wrapping_add(1) == s.depth[w as usize] {
                p.sigma.load(e, v as u64, Some(nb))?;
                p.delta.load(e, v as u64, Some(nb))?;
                e.instr(3);
                delta[v as usize] += s.sigma[v as usize] * share;
                p.delta.store(e, v as u64, Some(nb))?;
            }
        }
        if w != root {
            p.bc.load(e, w as u64, Some(popped))?;
            e.instr(1);
            bc[w as usize] += delta[w as usize];
            p.bc.store(e, w as u64, Some(popped))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;

    /// Brute force: for every ordered pair (s, t), the fraction of shortest s-t paths through v,
    /// from BFS path counts (sigma_sv * sigma_vt / sigma_st when d(s,v) + d(v,t) = d(s,t)).
    fn reference(g: &Csr) -> Vec<f64> {
        let n = g.vertices() as usize;
        let bfs = |s: u32| {
            let mut d = vec![u32::MAX; n];
            let mut sigma = vec![0.0f64; n];
            let mut q = std::collections::VecDeque::from([s]);
            d[s as usize] = 0;
            sigma[s as usize] = 1.0;
            while let Some(v) = q.pop_front() {
                for &w in g.neighbours(v) {
                    if d[w as usize] == u32::MAX {
                        d[w as usize] = d[v as usize] + 1;
                        q.push_back(w);
                    }
                    if d[w as usize] == d[v as usize] + 1 {
                        sigma[w as usize] += sigma[v as usize];
                    }
                }
            }
            (d, sigma)
        };
        let all: Vec<_> = (0..n as u32).map(bfs).collect();
        let mut bc = vec![0.0; n];
        for s in 0..n {
            for t in 0..n {
                let (ds, ss) = &all[s];
                if s == t || ds[t] == u32::MAX {
                    continue;
                }
                for v in (0..n).filter(|&v| v != s && v != t) {
                    let (dv, sv) = &all[v];
                    if ds[v] != u32::MAX && ds[v] + dv[t] == ds[t] {
                        bc[v] += ss[v] * sv[t] / ss[t];
                    }
                }
            }
        }
        bc
    }

    #[test]
    fn scores_from_every_root_match_brute_force() {
        // Two squares sharing vertex 3, plus a tail and an isolated vertex.
        let csr = Csr::from_edges(
            9,
            &[
                (0, 1),
                (1, 3),
                (3, 2),
                (2, 0),
                (3, 4),
                (4, 5),
                (5, 6),
                (6, 3),
                (6, 7),
            ],
        );
        let roots: Vec<u32> = (0..9).collect();
        let (_, _, _, bc) = run_once(csr.clone(), false, Props::alloc, move |e, g, p| {
            centrality(e, g, p, &roots)
        });
        let expected = reference(&csr);
        for v in 0..9 {
            assert!(
                (bc[v] - expected[v]).abs() < 1e-9,
                "vertex {v}: {} vs {}",
                bc[v],
                expected[v]
            );
        }
        assert!(bc[3] > bc[0] && bc[8] == 0.0);
    }

    #[test]
    fn the_region_of_interest_begins_at_the_first_roots_pass() {
        use crate::trace::{Op, Roi};
        use crate::workload::WorkloadConfig;
        let c = BcConfig {
            scale: 8,
            edge_factor: 4,
            references: 20_000,
            sources: 2,
            ..Default::default()
        };
        let (recs, roi, _, p) = run_with_roi(
            &WorkloadConfig::Bc(c.clone()),
            &c.keys(),
            false,
            Props::alloc,
        );
        // Set-up: every score zeroed.
        assert_eq!(roi, Roi::At(256));
        assert_initialise(&recs[..256], &[&p.bc]);
        // The first root's pass starts with its reset of the per-root state, which Brandes'
        // algorithm needs for every root: part of the region.
        assert_eq!(accesses(&recs[256..257], &p.depth), [(Op::Store, 0)]);
    }
}
