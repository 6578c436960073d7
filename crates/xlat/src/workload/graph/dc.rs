//! `dc`: GraphBIG's degree centrality, which counts each vertex's degree by walking every edge
//! list and incrementing the counter of the edge's target: a sequential scan of the CSR with a
//! scattered read-modify-write per edge. Restarts (zeroing the counters) when done.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};

kernel_config! {
    /// `[workload] name = "dc"`.
    DcConfig {}
}

/// Simulated property array: `degree` (u32 counter per vertex).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub degree: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            degree: s.per_vertex(4)?,
        })
    }
}

impl DcConfig {
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
            |e, g, p, _| loop {
                degrees(e, g, &p)?;
            },
        )
    }
}

/// Count every vertex's degree by scattering over the edges; returns the counts.
pub(crate) fn degrees(e: &mut Emitter, g: &Graph, p: &Props) -> Emit<Vec<u32>> {
    let n = g.vertices();
    let mut degree = vec![0u32; n as usize];
    for v in 0..n as u64 {
        e.instr(2);
        p.degree.store(e, v, None)?;
    }
    for u in 0..n {
        e.instr(2);
        let (row, bounds) = g.row(e, u, None)?;
        for i in row {
            e.instr(2);
            let (w, nb) = g.neighbour(e, i, bounds)?;
            p.degree.load(e, w as u64, Some(nb))?;
            e.instr(1);
            degree[w as usize] += 1;
            p.degree.store(e, w as u64, Some(nb))?;
        }
    }
    Ok(degree)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;
    use crate::trace::Op;

    #[test]
    fn counts_equal_row_lengths_and_each_edge_is_one_read_modify_write() {
        let csr = Csr::rmat(8, 8, 2);
        let (recs, (_, neighbours, _), p, degree) =
            run_once(csr.clone(), false, Props::alloc, degrees);
        for v in 0..csr.vertices() {
            assert_eq!(degree[v as usize] as u64, csr.degree(v));
        }
        let acc = accesses(&recs, &p.degree);
        let n = csr.vertices() as usize;
        assert!(acc[..n].iter().all(|&(op, _)| op == Op::Store));
        // Then per edge entry i: load and store of degree[neighbours[i]], in edge order.
        let expected: Vec<(Op, u64)> = (0..csr.entries())
            .flat_map(|i| {
                let w = csr.neighbour(i) as u64;
                [(Op::Load, w), (Op::Store, w)]
            })
            .collect();
        assert_eq!(acc[n..], expected[..]);
        assert_eq!(accesses(&recs, &neighbours).len() as u64, csr.entries());
    }
}
