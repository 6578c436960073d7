//! `tc`: triangle counting by intersecting sorted neighbour lists, in the ordered form of the
//! GAP benchmark suite (GraphBIG's TC intersects neighbour sets too): for every edge u > v, walk
//! v's neighbours w < v and advance a cursor through u's sorted row to find w there. Each
//! triangle w < v < u is counted once. The count restarts when the graph is done.

use super::{kernel_config, start, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Emitter, RecId, ThreadedSource};

kernel_config! {
    /// `[workload] name = "tc"`.
    TcConfig {}
}

/// Triangle counting keeps no per-vertex properties: all its accesses go to the CSR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props;

impl Props {
    pub fn alloc(_: &mut Setup) -> Result<Props> {
        Ok(Props)
    }
}

impl TcConfig {
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
            |e, g, _, _| loop {
                count(e, g)?;
            },
        )
    }
}

/// Count the triangles of the graph.
pub(crate) fn count(e: &mut Emitter, g: &Graph) -> Emit<u64> {
    let mut triangles = 0;
    for u in 0..g.vertices() {
        e.instr(2);
        let (u_row, u_bounds) = g.row(e, u, None)?;
        for i in u_row.clone() {
            e.instr(2);
            let (v, v_load) = g.neighbour(e, i, u_bounds)?;
            if v > u {
                break;
            }
            triangles += intersect(e, g, u_row.start, u_bounds, v, v_load)?;
        }
    }
    Ok(triangles)
}

/// Count the w < v in both rows. `u_start`: start of u's row; `v_load`: the load of v.
fn intersect(
    e: &mut Emitter,
    g: &Graph,
    u_start: u64,
    u_bounds: RecId,
    v: u32,
    v_load: RecId,
) -> Emit<u64> {
    let (v_row, v_bounds) = g.row(e, v, Some(v_load))?;
    let mut found = 0;
    // The cursor into u's row and its value, loaded when the cursor moves.
    let mut cursor = u_start;
    let mut at_cursor = None;
    for j in v_row {
        e.instr(2);
        let (w, _) = g.neighbour(e, j, v_bounds)?;
        if w > v {
            break;
        }
        loop {
            let x = match at_cursor {
                Some(x) => x,
                None => g.neighbour(e, cursor, u_bounds)?.0,
            };
            at_cursor = Some(x);
            e.instr(2);
            if x >= w {
                break;
            }
            cursor += 1;
            at_cursor = None;
        }
        if at_cursor == Some(w) {
            e.instr(1);
            found += 1;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;

    fn brute_force(g: &Csr) -> u64 {
        let n = g.vertices();
        let adjacent = |a: u32, b: u32| g.neighbours(a).binary_search(&b).is_ok();
        let mut t = 0;
        for a in 0..n {
            for b in a + 1..n {
                for c in b + 1..n {
                    if adjacent(a, b) && adjacent(b, c) && adjacent(a, c) {
                        t += 1;
                    }
                }
            }
        }
        t
    }

    #[test]
    fn triangle_of_three_emits_the_exact_intersection_walk() {
        let csr = Csr::from_edges(3, &[(0, 1), (1, 2), (2, 0)]);
        let (recs, (offsets, neighbours, _), _, triangles) =
            run_once(csr, false, Props::alloc, |e, g, _| count(e, g));
        assert_eq!(triangles, 1);
        // Rows: 0:[1,2] at 0..2, 1:[0,2] at 2..4, 2:[0,1] at 4..6.
        let (o, nb) = (|i| offsets.at(i), |i| neighbours.at(i));
        let expected = vec![
            o(0),
            o(1),
            nb(0), // u=0: v=1 > 0, stop
            o(1),
            o(2),
            nb(2), // u=1: v=0
            o(0),
            o(1),
            nb(0), // row of 0: w=1 > v=0, stop
            nb(3), // v=2 > 1, stop
            o(2),
            o(3),
            nb(4), // u=2: v=0
            o(0),
            o(1),
            nb(0), // w=1 > 0, stop
            nb(5), // v=1
            o(1),
            o(2),
            nb(2), // w=0 < 1
            nb(4), // cursor at u's row start: 0 == w, a triangle
            nb(3), // w=2 > 1, stop
        ];
        let got: Vec<_> = recs.iter().map(|r| r.vaddr).collect();
        assert_eq!(got, expected);
        assert!(recs.iter().all(|r| r.op == crate::trace::Op::Load));
    }

    #[test]
    fn counts_match_brute_force() {
        let k4 = Csr::from_edges(4, &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
        for (csr, expected) in [(k4, Some(4)), (Csr::rmat(7, 8, 5), None)] {
            let reference = brute_force(&csr);
            if let Some(t) = expected {
                assert_eq!(reference, t);
            }
            let (_, _, _, triangles) = run_once(csr, false, Props::alloc, |e, g, _| count(e, g));
            assert_eq!(triangles, reference);
        }
    }
}
