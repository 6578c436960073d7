//! The host-side graph: a compressed sparse row (CSR) adjacency structure, built from a
//! Graph500 Kronecker (R-MAT) edge generator or from an explicit edge list.
//!
//! This is the producer's *logical* copy of the graph (the algorithm needs the neighbour ids to
//! decide where to go next); the simulated process holds the same arrays at simulated
//! addresses, see [`super::Graph`].
//!
//! Construction buckets the directed edge entries by source, sorts each bucket in cache and
//! appends it to the CSR without duplicates: O(E log E) with a small constant. The buckets hold
//! 8 bytes per directed entry until the CSR is built (about 270 MB at scale 20, freed bucket by
//! bucket); the graph itself keeps 4 bytes per entry plus 8 per vertex.

use crate::rng::Rng;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

/// Graph500 Kronecker initiator probabilities (Graph500 specification: A=0.57, B=0.19,
/// C=0.19, D=0.05), as 16-bit fixed-point cumulative thresholds: one 16-bit uniform picks the
/// quadrant of one recursion level.
const A_END: u32 = (0.57 * 65536.0) as u32;
const B_END: u32 = ((0.57 + 0.19) * 65536.0) as u32;
const C_END: u32 = ((0.57 + 0.19 + 0.19) * 65536.0) as u32;

/// Source vertices per construction bucket: 4096 sources hold a few hundred KiB of entries at
/// the default edge factor, small enough to sort in the L2 cache.
const BUCKET_VERTICES: usize = 4096;

/// Graphs up to this many host bytes stay in [`RECENT_GRAPH`] after their runs (scale 21 at
/// the default edge factor fits; a scale-23 graph, about 1 GiB, is rebuilt, its runs being
/// long anyway).
const KEEP_BYTES: u64 = 256 << 20;

/// `(scale, edge_factor, seed)` of a Kronecker graph.
type GraphKey = (u32, u32, u64);

/// The most recent graph built, kept for the next caller that asks for the same one.
struct RecentGraph(Mutex<Option<(GraphKey, Arc<Csr>)>>);

impl RecentGraph {
    const fn new() -> RecentGraph {
        RecentGraph(Mutex::new(None))
    }

    /// The graph of `key`: the kept one if it is that graph, else `build()`'s, which is kept
    /// in its place if it is at most `keep_bytes` large. The kept graph is let go before the
    /// build, so at most one graph is held for later callers.
    fn get(&self, key: GraphKey, keep_bytes: u64, build: impl FnOnce() -> Csr) -> Arc<Csr> {
        // A build that panicked left nothing half-made behind: the lock's data stays valid.
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((k, g)) = kept.as_ref() {
            if *k == key {
                return Arc::clone(g);
            }
        }
        *kept = None;
        let g = Arc::new(build());
        if g.host_bytes() <= keep_bytes {
            *kept = Some((key, Arc::clone(&g)));
        }
        g
    }
}

/// The most recent Kronecker graph this process generated. Building a scale-20 graph takes
/// longer than a quick run simulates, and the runs of a sweep worker mostly ask for the same
/// graph (every kernel on one seed's graph), so the next run takes it as it is.
static RECENT_GRAPH: RecentGraph = RecentGraph::new();

/// An undirected graph in CSR form: the neighbours of `v` are
/// `neighbours[offsets[v]..offsets[v+1]]`, sorted ascending, without self loops or duplicates,
/// and every edge appears in both directions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr {
    offsets: Vec<u64>,
    neighbours: Vec<u32>,
}

impl Csr {
    /// The Graph500 Kronecker graph with `2^scale` vertices and `edge_factor * 2^scale`
    /// generated edges, symmetrised, with self loops and duplicates removed. Vertex labels are
    /// randomly permuted as Graph500's generator does, so high-degree vertices are scattered over
    /// the id space instead of clustering at small ids. Deterministic in `seed`.
    pub fn rmat(scale: u32, edge_factor: u32, seed: u64) -> Csr {
        let vertices = 1u64 << scale;
        let edges = edge_factor as u64 * vertices;
        let mut seeds = Rng::new(seed, 0);
        let edge_seed = seeds.next_u64();
        let permutation = permutation(vertices, &mut Rng::new(seeds.next_u64(), 1));
        Csr::build(vertices, move |sink| {
            let mut rng = Rng::new(edge_seed, 2);
            for _ in 0..edges {
                let (u, v) = kronecker_edge(&mut rng, scale);
                sink(permutation[u as usize], permutation[v as usize]);
            }
        })
    }

    /// [`Csr::rmat`], shared with the last caller that asked for the same graph: the process
    /// keeps its most recent graph (up to `KEEP_BYTES`). A graph of other keys replaces it,
    /// and is built only after the kept one is let go, so at most one graph is held for
    /// later runs.
    pub fn rmat_shared(scale: u32, edge_factor: u32, seed: u64) -> Arc<Csr> {
        RECENT_GRAPH.get((scale, edge_factor, seed), KEEP_BYTES, || {
            Csr::rmat(scale, edge_factor, seed)
        })
    }

    /// Host bytes of the two arrays.
    fn host_bytes(&self) -> u64 {
        (self.offsets.len() * 8 + self.neighbours.len() * 4) as u64
    }

    /// The graph on `vertices` vertices with the given (undirected) edges.
    pub fn from_edges(vertices: u64, edges: &[(u32, u32)]) -> Csr {
        Csr::build(vertices, |sink| {
            for &(u, v) in edges {
                sink(u, v);
            }
        })
    }

    /// Build from an edge stream (`edges` calls its sink once per edge).
    ///
    /// Each directed entry `(u, v)` first goes to the bucket of `u`'s high bits; each bucket
    /// is then sorted (it covers `BUCKET_VERTICES` sources, so the sort runs in cache) and
    /// appended to the CSR without duplicates. Scattering every entry straight to its row
    /// would touch the neighbour array at random, a cache and TLB miss per entry, several
    /// times slower at scale 20.
    fn build(vertices: u64, edges: impl FnOnce(&mut dyn FnMut(u32, u32))) -> Csr {
        let n = vertices as usize;
        let mut buckets: Vec<Vec<u64>> = vec![Vec::new(); n.div_ceil(BUCKET_VERTICES).max(1)];
        edges(&mut |u, v| {
            if u != v {
                buckets[u as usize / BUCKET_VERTICES].push(((u as u64) << 32) | v as u64);
                buckets[v as usize / BUCKET_VERTICES].push(((v as u64) << 32) | u as u64);
            }
        });
        let total = buckets.iter().map(Vec::len).sum();
        let mut offsets = vec![0u64; n + 1];
        let mut neighbours = Vec::with_capacity(total);
        // Rows of vertices below `next_row` have their start set.
        let mut next_row = 0usize;
        for bucket in &mut buckets {
            let mut entries = std::mem::take(bucket);
            entries.sort_unstable();
            entries.dedup();
            for entry in entries {
                let u = (entry >> 32) as usize;
                while next_row <= u {
                    offsets[next_row] = neighbours.len() as u64;
                    next_row += 1;
                }
                neighbours.push(entry as u32);
            }
        }
        while next_row <= n {
            offsets[next_row] = neighbours.len() as u64;
            next_row += 1;
        }
        neighbours.shrink_to_fit();
        Csr {
            offsets,
            neighbours,
        }
    }

    pub fn vertices(&self) -> u32 {
        (self.offsets.len() - 1) as u32
    }

    /// Directed edge entries (twice the undirected edge count).
    pub fn entries(&self) -> u64 {
        self.neighbours.len() as u64
    }

    /// Indices of `v`'s row in the neighbour array.
    #[inline]
    pub fn row(&self, v: u32) -> Range<u64> {
        self.offsets[v as usize]..self.offsets[v as usize + 1]
    }

    #[inline]
    pub fn degree(&self, v: u32) -> u64 {
        let r = self.row(v);
        r.end - r.start
    }

    /// The neighbour at index `i` of the neighbour array.
    #[inline]
    pub fn neighbour(&self, i: u64) -> u32 {
        self.neighbours[i as usize]
    }

    pub fn neighbours(&self, v: u32) -> &[u32] {
        let r = self.row(v);
        &self.neighbours[r.start as usize..r.end as usize]
    }
}

/// One Kronecker edge: at each of `scale` levels pick a quadrant of the adjacency matrix with
/// probabilities A, B, C, D, appending one bit to the row (u) and column (v) ids.
#[inline]
pub(super) fn kronecker_edge(rng: &mut Rng, scale: u32) -> (u32, u32) {
    let (mut u, mut v) = (0u32, 0u32);
    let mut bits = 0u64;
    for level in 0..scale {
        if level % 4 == 0 {
            bits = rng.next_u64();
        }
        let r = (bits & 0xffff) as u32;
        bits >>= 16;
        // Quadrants A (0,0), B (0,1), C (1,0), D (1,1), computed without branches: the choice
        // is random, so a branch would mispredict on every other level.
        let du = (r >= B_END) as u32;
        let dv = (A_END..B_END).contains(&r) as u32 | (r >= C_END) as u32;
        u = (u << 1) | du;
        v = (v << 1) | dv;
    }
    (u, v)
}

/// A uniformly random permutation of `0..n` (Fisher-Yates).
fn permutation(n: u64, rng: &mut Rng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..p.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        p.swap(i, j);
    }
    p
}

/// The weight of edge {u, v} for the weighted kernels: a hash of the unordered pair and the
/// graph's salt, uniform in 1..=255 (Graph500's SSSP kernel uses random weights; the hash makes
/// both directions agree without storing a host-side weight array).
pub fn edge_weight(u: u32, v: u32, salt: u64) -> u32 {
    let (a, b) = (u.min(v) as u64, u.max(v) as u64);
    let mut z = ((a << 32) | b) ^ salt;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    1 + (z % 255) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmat_is_deterministic_and_seed_dependent() {
        let a = Csr::rmat(10, 8, 42);
        assert_eq!(a, Csr::rmat(10, 8, 42));
        assert_ne!(a, Csr::rmat(10, 8, 43));
    }

    #[test]
    fn the_recent_graph_is_reused_for_its_keys_and_replaced_by_others() {
        let recent = RecentGraph::new();
        let builds = std::cell::Cell::new(0);
        let get = |seed: u64, keep_bytes: u64| {
            recent.get((9, 3, seed), keep_bytes, || {
                builds.set(builds.get() + 1);
                Csr::rmat(9, 3, seed)
            })
        };
        let a = get(1, u64::MAX);
        assert_eq!(*a, Csr::rmat(9, 3, 1));
        assert!(
            Arc::ptr_eq(&a, &get(1, u64::MAX)),
            "the same keys share one graph"
        );
        assert_eq!(builds.get(), 1);
        // Other keys: built, and kept in its place.
        let b = get(2, u64::MAX);
        assert_eq!(*b, Csr::rmat(9, 3, 2));
        assert!(Arc::ptr_eq(&b, &get(2, u64::MAX)));
        get(1, u64::MAX);
        assert_eq!(builds.get(), 3);
        // A graph over the size bound is built every time; the kept one was let go for it.
        get(2, 0);
        get(2, 0);
        assert_eq!(builds.get(), 5);
        // The shared entry point gives the generated graph.
        assert_eq!(*Csr::rmat_shared(9, 3, 7), Csr::rmat(9, 3, 7));
    }

    #[test]
    fn rmat_csr_is_valid_symmetric_and_loop_free() {
        let g = Csr::rmat(11, 16, 7);
        assert_eq!(g.vertices(), 2048);
        assert!(g.entries() > 0 && g.entries() <= 2 * 16 * 2048);
        assert_eq!(g.offsets[0], 0);
        assert_eq!(*g.offsets.last().unwrap(), g.entries());
        for v in 0..g.vertices() {
            let row = g.neighbours(v);
            assert!(
                row.windows(2).all(|w| w[0] < w[1]),
                "row {v} sorted, no dups"
            );
            for &w in row {
                assert_ne!(w, v, "self loop at {v}");
                assert!(
                    g.neighbours(w).binary_search(&v).is_ok(),
                    "{v}-{w} not symmetric"
                );
            }
        }
    }

    #[test]
    fn rmat_degrees_are_skewed() {
        let g = Csr::rmat(14, 16, 1);
        let n = g.vertices() as u64;
        let max = (0..g.vertices()).map(|v| g.degree(v)).max().unwrap();
        let mean = g.entries() / n;
        assert!(max > 50 * mean, "max degree {max}, mean {mean}");
        // Power-law graphs leave many vertices isolated or nearly so.
        let low = (0..g.vertices()).filter(|&v| g.degree(v) <= 1).count() as u64;
        assert!(low > n / 10, "{low} of {n} vertices with degree <= 1");
    }

    #[test]
    fn from_edges_symmetrises_and_drops_loops_and_duplicates() {
        let g = Csr::from_edges(4, &[(0, 1), (1, 0), (2, 2), (3, 1), (0, 1)]);
        assert_eq!(g.neighbours(0), &[1]);
        assert_eq!(g.neighbours(1), &[0, 3]);
        assert!(g.neighbours(2).is_empty());
        assert_eq!(g.neighbours(3), &[1]);
        assert_eq!(g.row(3), 3..4);
    }

    proptest::proptest! {
        /// The bucketed build equals the obvious set-of-pairs construction, also across
        /// bucket boundaries.
        #[test]
        fn from_edges_matches_a_set_of_pairs(
            edges in proptest::collection::vec((0u32..9000, 0u32..9000), 0..300)
        ) {
            let g = Csr::from_edges(9000, &edges);
            let mut pairs = std::collections::BTreeSet::new();
            for &(u, v) in edges.iter().filter(|(u, v)| u != v) {
                pairs.insert((u, v));
                pairs.insert((v, u));
            }
            let from_csr: Vec<(u32, u32)> = (0..g.vertices())
                .flat_map(|v| g.neighbours(v).iter().map(move |&w| (v, w)))
                .collect();
            proptest::prop_assert_eq!(from_csr, pairs.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn weights_are_symmetric_and_in_range() {
        for (u, v) in [(0, 1), (5, 3), (1 << 20, 7)] {
            let w = edge_weight(u, v, 99);
            assert_eq!(w, edge_weight(v, u, 99));
            assert!((1..=255).contains(&w));
        }
    }
}
