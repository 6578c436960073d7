//! `pr`: GraphBIG's PageRank in its pull form (as in the GAP benchmark suite): each iteration
//! first computes every vertex's outgoing contribution `rank[u] / degree(u)`, then each vertex
//! sums the contributions of its neighbours, `rank[v] = (1 - d) / n + d * sum`, with damping
//! d = 0.85. After `iterations` iterations the ranks are reset to 1/n and the computation
//! restarts.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};
use crate::workload::nonzero;

/// The damping factor of the original PageRank paper and of GraphBIG/GAP.
const DAMPING: f64 = 0.85;

kernel_config! {
    /// `[workload] name = "pr"`.
    PrConfig {
        /// Iterations of one PageRank computation before it restarts.
        iterations: u32 = 10,
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
    pub fn validate(&self, path: &str) -> Result<()> {
        self.keys().validate(path)?;
        nonzero(format!("{path}.iterations"), self.iterations as u64)
    }

    pub fn build(&self, os: &mut dyn AddressSpaces, pid: u16, seed: u64) -> Result<ThreadedSource> {
        let keys = self.keys();
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
    }
}

/// One PageRank computation of `iterations` iterations; returns the ranks.
pub(crate) fn pagerank(e: &mut Emitter, g: &Graph, p: &Props, iterations: u32) -> Emit<Vec<f64>> {
    let n = g.vertices();
    let mut rank = vec![1.0 / n as f64; n as usize];
    let mut contrib = vec![0.0f64; n as usize];
    for v in 0..n as u64 {
        e.instr(2);
        p.rank.store(e, v, None)?;
    }
    let base = (1.0 - DAMPING) / n as f64;
    for _ in 0..iterations {
        for u in 0..n {
            e.instr(2);
            p.rank.load(e, u as u64, None)?;
            g.row(e, u, None)?;
            // Degree subtraction, conversion and the division.
            e.instr(4);
            let degree = g.csr.degree(u);
            contrib[u as usize] = if degree == 0 {
                0.0
            } else {
                rank[u as usize] / degree as f64
            };
            p.contrib.store(e, u as u64, None)?;
        }
        for v in 0..n {
            e.instr(2);
            let (row, bounds) = g.row(e, v, None)?;
            let mut sum = 0.0;
            for i in row {
                e.instr(2);
                let (u, nb) = g.neighbour(e, i, bounds)?;
                p.contrib.load(e, u as u64, Some(nb))?;
                e.instr(1);
                sum += contrib[u as usize];
            }
            e.instr(3);
            rank[v as usize] = base + DAMPING * sum;
            p.rank.store(e, v as u64, None)?;
        }
    }
    Ok(rank)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;
    use crate::trace::Op;

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
    fn ranks_converge_and_keep_their_mass() {
        let (_, _, _, rank) =
            run_once(kite(), false, Props::alloc, |e, g, p| pagerank(e, g, p, 50));
        // No dangling vertices: the ranks stay a distribution.
        assert!((rank.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Vertices 0 and 2 (degree 3) outrank 1 and 3 (degree 2); symmetric pairs agree.
        assert!(rank[0] > rank[1]);
        assert!((rank[0] - rank[2]).abs() < 1e-12 && (rank[1] - rank[3]).abs() < 1e-12);
    }
}
