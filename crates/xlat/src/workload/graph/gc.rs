//! `gc`: greedy graph colouring (GraphBIG's graph-colouring kernel, sequential first-fit): in
//! vertex order, mark the colours of the already-coloured neighbours in a `forbidden` array
//! (stamped with the current vertex, so it never needs clearing) and give the vertex the
//! smallest unmarked colour. Restarts from an uncoloured graph when done.

use super::{kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, ThreadedSource};

kernel_config! {
    /// `[workload] name = "gc"`.
    GcConfig {}
}

/// `colour[v]` of an uncoloured vertex, and a `forbidden` slot no vertex has stamped.
pub const NONE: u32 = u32::MAX;

/// Simulated property arrays: `colour` (u32 per vertex) and `forbidden` (u32 per colour; a
/// vertex needs at most degree + 1 colours, so one per vertex suffices).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub colour: Array,
    pub forbidden: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            colour: s.per_vertex(4)?,
            forbidden: s.per_vertex(4)?,
        })
    }
}

impl GcConfig {
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
                colour(e, g, &p)?;
            },
        )
        .map(ThreadedSource::marks_roi)
    }
}

/// Colour every vertex first-fit; returns the colours.
pub(crate) fn colour(e: &mut Emitter, g: &Graph, p: &Props) -> Emit<Vec<u32>> {
    let n = g.vertices();
    let mut colour = vec![NONE; n as usize];
    let mut forbidden = vec![NONE; n as usize];
    for v in 0..n as u64 {
        e.instr(2);
        p.colour.store(e, v, None)?;
        p.forbidden.store(e, v, None)?;
    }
    // GraphBIG uncolours the vertices when it loads the graph and between runs, outside its
    // timer: the first run's initialisation is set-up (later runs' marks are ignored).
    e.roi();
    for v in 0..n {
        e.instr(2);
        let (row, bounds) = g.row(e, v, None)?;
        for i in row {
            e.instr(2);
            let (w, nb) = g.neighbour(e, i, bounds)?;
            let c_load = p.colour.load(e, w as u64, Some(nb))?;
            e.instr(1);
            let c = colour[w as usize];
            if c != NONE {
                forbidden[c as usize] = v;
                p.forbidden.store(e, c as u64, Some(c_load))?;
            }
        }
        let mut c = 0;
        loop {
            e.instr(2);
            p.forbidden.load(e, c as u64, None)?;
            if forbidden[c as usize] != v {
                break;
            }
            c += 1;
        }
        colour[v as usize] = c;
        p.colour.store(e, v as u64, None)?;
    }
    Ok(colour)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;

    #[test]
    fn colouring_is_proper_and_first_fit() {
        let csr = Csr::rmat(9, 8, 6);
        let (recs, _, p, col) = run_once(csr.clone(), false, Props::alloc, colour);
        for v in 0..csr.vertices() {
            let c = col[v as usize];
            assert!(c as u64 <= csr.degree(v));
            for &w in csr.neighbours(v) {
                assert_ne!(col[w as usize], c, "edge {v}-{w}");
            }
            // First fit: every smaller colour is taken by an earlier neighbour.
            for smaller in 0..c {
                assert!(csr
                    .neighbours(v)
                    .iter()
                    .any(|&w| w < v && col[w as usize] == smaller));
            }
        }
        assert!(col.iter().max().unwrap() > &1);
        assert!(!accesses(&recs, &p.forbidden).is_empty());
    }

    #[test]
    fn path_alternates_two_colours() {
        let csr = Csr::from_edges(4, &[(0, 1), (1, 2), (2, 3)]);
        let (_, _, _, col) = run_once(csr, false, Props::alloc, colour);
        assert_eq!(col, vec![0, 1, 0, 1]);
    }

    #[test]
    fn the_region_of_interest_begins_at_the_first_vertex_coloured() {
        use crate::trace::{Op, Roi};
        use crate::workload::WorkloadConfig;
        let c = GcConfig {
            scale: 8,
            edge_factor: 4,
            references: 20_000,
            ..Default::default()
        };
        let (recs, roi, (offsets, _, _), p) = run_with_roi(
            &WorkloadConfig::Gc(c.clone()),
            &c.keys(),
            false,
            Props::alloc,
        );
        // Set-up: every vertex uncoloured and every colour unstamped.
        assert_eq!(roi, Roi::At(512));
        assert_initialise(&recs[..512], &[&p.colour, &p.forbidden]);
        // Colouring starts by reading vertex 0's row bounds.
        assert_eq!(
            accesses(&recs[512..514], &offsets),
            [(Op::Load, 0), (Op::Load, 1)]
        );
    }
}
