//! `cc`: connected components by label propagation (GraphBIG's connected-component kernel
//! propagates labels the same way): every vertex starts with its own id as label and, sweep
//! after sweep, takes the smallest label among itself and its neighbours, until a sweep changes
//! nothing. Labels propagate within a sweep (updated in place), so the number of sweeps is at
//! most about the diameter. The final label of a vertex is the smallest id in its component.
//! Restarts from the initial labels when done.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};

kernel_config! {
    /// `[workload] name = "cc"`.
    CcConfig {}
}

/// Simulated property array: `component` (u32 label per vertex).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub component: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            component: s.per_vertex(4)?,
        })
    }
}

impl CcConfig {
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
                components(e, g, &p)?;
            },
        )
        .map(ThreadedSource::marks_roi)
    }
}

/// Label every vertex with the smallest vertex id of its component; returns the labels.
pub(crate) fn components(e: &mut Emitter, g: &Graph, p: &Props) -> Emit<Vec<u32>> {
    let n = g.vertices();
    let mut label: Vec<u32> = (0..n).collect();
    for v in 0..n as u64 {
        e.instr(2);
        p.component.store(e, v, None)?;
    }
    // GraphBIG initialises the per-vertex state when it loads the graph and resets it between
    // runs, outside its timer: the first run's initialisation is set-up (later runs' marks are
    // ignored).
    e.roi();
    loop {
        let mut changed = false;
        for v in 0..n {
            e.instr(2);
            p.component.load(e, v as u64, None)?;
            let mut smallest = label[v as usize];
            let (row, bounds) = g.row(e, v, None)?;
            for i in row {
                e.instr(2);
                let (u, nb) = g.neighbour(e, i, bounds)?;
                p.component.load(e, u as u64, Some(nb))?;
                e.instr(2);
                smallest = smallest.min(label[u as usize]);
            }
            if smallest < label[v as usize] {
                e.instr(1);
                label[v as usize] = smallest;
                p.component.store(e, v as u64, None)?;
                changed = true;
            }
        }
        if !changed {
            return Ok(label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;

    /// Union-find reference: the smallest vertex of each vertex's component.
    fn reference(g: &Csr) -> Vec<u32> {
        let n = g.vertices() as usize;
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for v in 0..n {
            for &w in g.neighbours(v as u32) {
                let (a, b) = (find(&mut parent, v), find(&mut parent, w as usize));
                // Keep the smaller id as the root, so roots are the component minima.
                parent[a.max(b)] = a.min(b);
            }
        }
        (0..n).map(|v| find(&mut parent, v) as u32).collect()
    }

    #[test]
    fn labels_match_union_find_on_a_small_forest() {
        let csr = Csr::from_edges(8, &[(5, 6), (6, 1), (3, 7), (2, 0), (7, 4)]);
        let (recs, _, p, labels) = run_once(csr.clone(), false, Props::alloc, components);
        assert_eq!(labels, vec![0, 1, 0, 3, 3, 1, 1, 3]);
        assert_eq!(labels, reference(&csr));
        // Every label change is a store to component[v] after the initialisation.
        let stores = accesses(&recs, &p.component)
            .iter()
            .filter(|(op, _)| *op == crate::trace::Op::Store)
            .count();
        let changed = labels
            .iter()
            .enumerate()
            .filter(|(v, &l)| l != *v as u32)
            .count();
        assert!(stores >= 8 + changed);
    }

    #[test]
    fn labels_match_union_find_on_a_kronecker_graph() {
        let csr = Csr::rmat(10, 4, 9);
        let (_, _, _, labels) = run_once(csr.clone(), false, Props::alloc, components);
        assert_eq!(labels, reference(&csr));
        let mut distinct = labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() > 1,
            "isolated vertices are their own components"
        );
    }

    #[test]
    fn the_region_of_interest_begins_at_the_first_sweep() {
        use crate::trace::{Op, Roi};
        use crate::workload::WorkloadConfig;
        let c = CcConfig {
            scale: 8,
            edge_factor: 4,
            references: 20_000,
            ..Default::default()
        };
        let (recs, roi, _, p) = run_with_roi(
            &WorkloadConfig::Cc(c.clone()),
            &c.keys(),
            false,
            Props::alloc,
        );
        // Set-up: every vertex labelled with its own id.
        assert_eq!(roi, Roi::At(256));
        assert_initialise(&recs[..256], &[&p.component]);
        // The first sweep starts by reading vertex 0's label.
        assert_eq!(accesses(&recs[256..257], &p.component), [(Op::Load, 0)]);
    }
}
