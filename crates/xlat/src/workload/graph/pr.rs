//! `pr`: GraphBIG's PageRank in its pull form (as in the GAP benchmark suite): each iteration
//! first computes every vertex's outgoing contribution `rank[u] / degree(u)`, then each vertex
//! sums the contributions of its neighbours, `rank[v] = (1 - d) / n + d * sum`, with damping
//! d = 0.85. After `iterations` iterations the ranks are reset to 1/n and the computation
//! restarts.
//!
//! With `threads`, every loop over the vertices (the initialisation, each iteration's
//! contribution and pull sweeps) is split among the threads (OpenMP static schedule: a
//! contiguous run of vertices each), with a barrier after each, as the loops are separate
//! parallel regions: no thread pulls a contribution before every thread has computed them.

use super::{kernel_config, start, Access, Emit, Graph, GraphKeys, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};
use crate::workload::nonzero;
use std::sync::atomic::{AtomicU64, Ordering};

/// The damping factor of the original PageRank paper and of GraphBIG/GAP.
const DAMPING: f64 = 0.85;

kernel_config! {
    /// `[workload] name = "pr"`.
    PrConfig {
        /// Iterations of one PageRank computation before it restarts.
        iterations: u32 = 10,
        /// Software threads of the one process, each on its own core (1 to 64).
        threads: u32 = 1,
    }
}

/// Simulated property arrays: `rank` and `contrib` (f64 per vertex).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub rank: Array,
    pub contrib: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            rank: s.per_vertex(8)?,
            contrib: s.per_vertex(8)?,
        })
    }
}

impl PrConfig {
    fn graph_keys(&self) -> GraphKeys {
        GraphKeys {
            threads: self.threads,
            ..self.keys()
        }
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        self.graph_keys().validate(path)?;
        nonzero(format!("{path}.iterations"), self.iterations as u64)
    }

    pub fn build(&self, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<ThreadedSource> {
        let keys = self.graph_keys();
        let iterations = self.iterations;
        start(
            GraphSource::kronecker(&keys),
            &keys,
            false,
            os,
            pid,
            seed,
            Props::alloc,
            move |e, g, p, _| loop {
                pagerank(e, g, &p, iterations)?;
            },
        )
        .map(ThreadedSource::marks_roi)
    }
}

/// The host values of `rank` and `contrib`, shared by the team. Between two barriers each thread
/// writes only its own vertices, so relaxed atomics are enough: the barrier orders them.
struct Values {
    rank: Vec<AtomicU64>,
    contrib: Vec<AtomicU64>,
}

impl Values {
    fn new(n: u32) -> Values {
        let at = |x: f64| (0..n).map(|_| AtomicU64::new(x.to_bits())).collect();
        Values {
            rank: at(1.0 / n as f64),
            contrib: at(0.0),
        }
    }

    fn get(a: &[AtomicU64], i: u32) -> f64 {
        f64::from_bits(a[i as usize].load(Ordering::Relaxed))
    }

    fn set(a: &[AtomicU64], i: u32, x: f64) {
        a[i as usize].store(x.to_bits(), Ordering::Relaxed);
    }
}

/// One PageRank computation of `iterations` iterations by this thread (with the others of its
/// team); returns the ranks.
pub(crate) fn pagerank(e: &mut Emitter, g: &Graph, p: &Props, iterations: u32) -> Emit<Vec<f64>> {
    let n = g.vertices();
    let values = e.share(|| Values::new(n))?;
    let (rank, contrib) = (&values.rank[..], &values.contrib[..]);
    let mine = e.static_share(0..n as u64);
    let mine = mine.start as u32..mine.end as u32;
    for v in mine.clone() {
        e.instr(2);
        p.rank.store(e, v as u64, None)?;
    }
    e.barrier()?;
    // GraphBIG initialises the ranks (init_pagerank) before starting its timer: the first
    // computation's initialisation is set-up (every thread marks here, after the barrier; later
    // computations' marks are ignored).
    e.roi();
    let base = (1.0 - DAMPING) / n as f64;
    for _ in 0..iterations {
        for u in mine.clone() {
            e.instr(2);
            p.rank.load(e, u as u64, None)?;
            g.row(e, u, None)?;
            // Degree subtraction, conversion and the division.
            e.instr(4);
            let degree = g.adj.degree(u);
            let c = if degree == 0 {
                0.0
            } else {
                Values::get(rank, u) / degree as f64
            };
            Values::set(contrib, u, c);
            p.contrib.store(e, u as u64, None)?;
        }
        e.barrier()?;
        for v in mine.clone() {
            e.instr(2);
            let (row, bounds) = g.row(e, v, None)?;
            let mut sum = 0.0;
            for i in row {
                e.instr(2);
                let (u, nb) = g.neighbour(e, i, bounds)?;
                p.contrib.load(e, u as u64, Some(nb))?;
                e.instr(1);
                sum += Values::get(contrib, u);
            }
            e.instr(3);
            Values::set(rank, v, base + DAMPING * sum);
            p.rank.store(e, v as u64, None)?;
        }
        e.barrier()?;
    }
    Ok((0..n).map(|v| Values::get(rank, v)).collect())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;
    use crate::trace::Op;
    use crate::workload::emit::TURN;
    use crate::workload::testutil::max_lead;

    /// A square 0-1-2-3-0 with the diagonal 0-2.
    fn kite() -> Csr {
        Csr::from_edges(4, &[(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
    }

    #[test]
    fn accesses_follow_the_pull_loop_and_stay_in_the_arrays() {
        let csr = kite();
        let (recs, (offsets, neighbours, _), p, _) =
            run_once(csr.clone(), false, Props::alloc, |e, g, p| {
                pagerank(e, g, p, 2)
            });
        // The loop nest, written out over the host CSR.
        let (ld, st) = (Op::Load, Op::Store);
        let mut expected = Vec::new();
        for v in 0..4 {
            expected.push((st, p.rank.at(v)));
        }
        for _ in 0..2 {
            for u in 0..4u32 {
                expected.push((ld, p.rank.at(u as u64)));
                expected.push((ld, offsets.at(u as u64)));
                expected.push((ld, offsets.at(u as u64 + 1)));
                expected.push((st, p.contrib.at(u as u64)));
            }
            for v in 0..4u32 {
                expected.push((ld, offsets.at(v as u64)));
                expected.push((ld, offsets.at(v as u64 + 1)));
                for i in csr.row(v) {
                    expected.push((ld, neighbours.at(i)));
                    expected.push((ld, p.contrib.at(csr.neighbour(i) as u64)));
                }
                expected.push((st, p.rank.at(v as u64)));
            }
        }
        let got: Vec<_> = recs.iter().map(|r| (r.op, r.vaddr)).collect();
        assert_eq!(got, expected);
        // Contribution loads depend on the neighbour load right before them.
        for (k, r) in recs.iter().enumerate() {
            if r.vaddr.0 >= p.contrib.base.0 && r.op == Op::Load {
                assert_eq!(r.dep, 1, "record {k}");
            }
        }
    }

    #[test]
    fn a_team_splits_every_sweep_and_computes_the_same_ranks() {
        let csr = Csr::rmat(8, 8, 5);
        let kernel = |e: &mut Emitter, g: &Graph, p: &Props| pagerank(e, g, p, 3);
        let (alone, _, ranks) = run_team(csr.clone(), 1, Props::alloc, kernel);
        let (team, barriers, team_ranks) = run_team(csr, 4, Props::alloc, kernel);
        // Each vertex sums its row in the same order whichever thread does it: the same bits.
        assert_eq!(team_ranks, ranks);
        assert_eq!(work(&team), work(&alone));
        assert_eq!(
            team.iter().map(|r| r.core).max(),
            Some(3),
            "every thread takes part"
        );
        // The graph and the rank arrays are shared at barriers; then the initialisation and the
        // two sweeps of every iteration each end at one.
        assert_eq!(barriers.len(), 2 + 1 + 2 * 3);
        assert!(max_lead(&team, &barriers) <= TURN as u64);
    }

    #[test]
    fn ranks_converge_and_keep_their_mass() {
        let (_, _, _, rank) =
            run_once(kite(), false, Props::alloc, |e, g, p| pagerank(e, g, p, 50));
        // No dangling vertices: the ranks stay a distribution.
        assert!((rank.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Vertices 0 and 2 (degree 3) outrank 1 and 3 (degree 2); symmetric pairs agree.
        assert!(rank[0] > rank[1]);
        assert!((rank[0] - rank[2]).abs() < 1e-12 && (rank[1] - rank[3]).abs() < 1e-12);
    }

    #[test]
    fn the_region_of_interest_begins_at_the_first_iteration() {
        use crate::trace::Roi;
        use crate::workload::WorkloadConfig;
        for threads in [1, 3] {
            let c = PrConfig {
                scale: 8,
                edge_factor: 4,
                references: 20_000,
                iterations: 2,
                threads,
                ..Default::default()
            };
            let (recs, roi, _, p) = run_with_roi(
                &WorkloadConfig::Pr(c.clone()),
                &c.keys(),
                false,
                Props::alloc,
            );
            // Set-up: the initial rank of each of the 256 vertices, split among the threads.
            assert_eq!(roi, Roi::At(256), "threads {threads}");
            assert_initialise(&recs[..256], &[&p.rank]);
            // The first iteration starts with thread 0 reading the rank of vertex 0.
            assert_eq!(recs[256].core, 0);
            assert_eq!(accesses(&recs[256..257], &p.rank), [(Op::Load, 0)]);
        }
    }
}
