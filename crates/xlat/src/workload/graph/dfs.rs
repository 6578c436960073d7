//! `dfs`: GraphBIG's depth-first search, iterative with an explicit stack in simulated memory.
//! Each stack frame holds a vertex's row cursor and row end (two u64), so the search visits
//! vertices in exactly the preorder of the recursive DFS while the stack stays bounded by the
//! vertex count. Restarts from a new seeded root when the search finishes.

use super::{field, kernel_config, start, Access, Emit, Graph, GraphSource, Setup};
use crate::error::Result;
use crate::os::AddressSpaces;
use crate::workload::emit::{Array, Emitter, RecId, ThreadedSource};

kernel_config! {
    /// `[workload] name = "dfs"`.
    DfsConfig {}
}

/// `order[v]` of a vertex not visited yet.
pub const UNVISITED: u32 = u32::MAX;
/// Byte offsets of a stack frame's fields.
const CURSOR: u64 = 0;
const END: u64 = 8;

/// Simulated property arrays: `order` (visit number, u32 per vertex) and the `stack` of
/// 16-byte frames (one per vertex at most).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Props {
    pub order: Array,
    pub stack: Array,
}

impl Props {
    pub fn alloc(s: &mut Setup) -> Result<Props> {
        Ok(Props {
            order: s.per_vertex(4)?,
            stack: s.per_vertex(16)?,
        })
    }
}

impl DfsConfig {
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
        .map(ThreadedSource::marks_roi)
    }
}

/// A stack frame: the next row index to look at and the row's end.
struct Frame {
    cursor: u64,
    end: u64,
}

/// Visit `v`: store its number and push its frame (`on`: the load `v` came from).
fn visit(
    e: &mut Emitter,
    g: &Graph,
    p: &Props,
    v: u32,
    on: Option<RecId>,
    stack: &mut Vec<Frame>,
) -> Emit<()> {
    e.instr(2);
    p.order.store(e, v as u64, on)?;
    let (row, _) = g.row(e, v, on)?;
    let depth = stack.len() as u64;
    e.store(field(&p.stack, depth, CURSOR), 8)?;
    e.store(field(&p.stack, depth, END), 8)?;
    stack.push(Frame {
        cursor: row.start,
        end: row.end,
    });
    Ok(())
}

/// One search from `root`; returns every vertex's visit number.
pub(crate) fn search(e: &mut Emitter, g: &Graph, p: &Props, root: u32) -> Emit<Vec<u32>> {
    let n = g.vertices();
    let mut order = vec![UNVISITED; n as usize];
    for v in 0..n as u64 {
        e.instr(2);
        p.order.store(e, v, None)?;
    }
    // GraphBIG sets every vertex unvisited when it loads the graph and resets them between
    // runs, outside its timer, which starts with the root's visit: the first search's
    // initialisation is set-up (later searches' marks are ignored).
    e.roi();
    let mut stack = Vec::new();
    order[root as usize] = 0;
    let mut visited = 1;
    visit(e, g, p, root, None, &mut stack)?;
    while !stack.is_empty() {
        e.instr(2);
        let depth = stack.len() - 1;
        let cursor = e.load(field(&p.stack, depth as u64, CURSOR), 8)?;
        e.load(field(&p.stack, depth as u64, END), 8)?;
        e.instr(1);
        let top = &mut stack[depth];
        if top.cursor == top.end {
            stack.pop();
            continue;
        }
        let i = top.cursor;
        top.cursor += 1;
        let (w, nb) = g.neighbour(e, i, cursor)?;
        e.store(field(&p.stack, depth as u64, CURSOR), 8)?;
        p.order.load(e, w as u64, Some(nb))?;
        e.instr(1);
        if order[w as usize] == UNVISITED {
            order[w as usize] = visited;
            visited += 1;
            visit(e, g, p, w, Some(nb), &mut stack)?;
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::Csr;
    use super::*;
    use crate::trace::Op;

    fn recursive_preorder(g: &Csr, v: u32, seen: &mut [bool], out: &mut Vec<u32>) {
        seen[v as usize] = true;
        out.push(v);
        for &w in g.neighbours(v) {
            if !seen[w as usize] {
                recursive_preorder(g, w, seen, out);
            }
        }
    }

    #[test]
    fn visits_in_recursive_preorder() {
        let csr = Csr::rmat(9, 4, 8);
        let root = (0..csr.vertices()).find(|&v| csr.degree(v) > 0).unwrap();
        let mut expected = Vec::new();
        recursive_preorder(&csr, root, &mut vec![false; 512], &mut expected);
        let (recs, _, p, order) = run_once(csr.clone(), false, Props::alloc, move |e, g, p| {
            search(e, g, p, root)
        });
        let stores: Vec<u32> = accesses(&recs, &p.order)
            .into_iter()
            .filter(|&(op, _)| op == Op::Store)
            .map(|(_, v)| v as u32)
            .skip(512)
            .collect();
        assert_eq!(stores, expected);
        for (k, &v) in expected.iter().enumerate() {
            assert_eq!(order[v as usize], k as u32);
        }
        // The stack never grows beyond the deepest path.
        let frames = accesses(&recs, &p.stack)
            .iter()
            .map(|&(_, f)| f)
            .max()
            .unwrap();
        assert!(frames < expected.len() as u64);
    }

    #[test]
    fn the_region_of_interest_begins_at_the_first_roots_visit() {
        use crate::trace::Roi;
        use crate::workload::WorkloadConfig;
        let c = DfsConfig {
            scale: 8,
            edge_factor: 4,
            references: 20_000,
            ..Default::default()
        };
        let (recs, roi, _, p) = run_with_roi(
            &WorkloadConfig::Dfs(c.clone()),
            &c.keys(),
            false,
            Props::alloc,
        );
        // Set-up: every vertex marked unvisited.
        assert_eq!(roi, Roi::At(256));
        assert_initialise(&recs[..256], &[&p.order]);
        // The search starts by numbering the root.
        let first = accesses(&recs[256..257], &p.order);
        assert!(matches!(first[..], [(Op::Store, _)]), "{first:?}");
    }
}
