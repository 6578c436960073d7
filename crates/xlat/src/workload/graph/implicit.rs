//! The implicit Kronecker graph: the same R-MAT distribution as [`super::Csr::rmat`], but no
//! edge is stored on the host. Each vertex's row is derived on demand from a seeded hash of the
//! vertex, so the host keeps only the row offsets (one `u64` per vertex) and the kernels' own
//! per-vertex state, whatever the number of edges.
//!
//! The R-MAT recursion picks, at each of `scale` levels, a quadrant of the adjacency matrix:
//! the source bit is 1 with probability `C + D`, and given it the destination bit is 1 with
//! probability `B / (A + B)` (source bit 0) or `D / (C + D)` (source bit 1). The levels are
//! independent, so among the `E = edge_factor * 2^scale` generated edges the number leaving
//! vertex `u` is Binomial(E, p_out(u)) with `p_out(u)` the product over `u`'s bits of
//! `A + B` (bit 0) or `C + D` (bit 1), and each of those edges' destinations draws its bits from
//! the conditional probabilities above; likewise for the edges entering `u`. A row here is one
//! draw of both: the out-edges and the in-edges of `u` (what symmetrising puts in `u`'s row),
//! with counts drawn as Poisson variates of the binomials' means (E is large and p small) and
//! the other endpoints drawn bit by bit, then labelled through a seeded permutation (Graph500
//! permutes labels too) and sorted.
//!
//! Differences from the explicit graph, by design:
//! * rows are drawn per vertex, independently: `w` in `v`'s row does not imply `v` in `w`'s
//!   (the graph is directed, with the symmetrised graph's degree distribution);
//! * duplicates and self loops stay (a multigraph): removing them would change a row's length
//!   after the offsets were fixed. Graph500 removes them; they are about 6 % of the entries at
//!   scale 20, so the implicit graph has that many more entries at the same parameters.
//!
//! Rows are regenerated each time a kernel reads one; a small per-thread cache keeps the rows
//! read last (a traversal reads a row's entries one by one, triangle counting two rows at once),
//! and a larger one the longest rows read (the hubs, which most rows lead to).

use crate::rng::Rng;
use crate::workload::dist::{mix64, Scatter};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ops::{Deref, Range};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Graph500 initiator probabilities, as in [`super::rmat`].
const A: f64 = 0.57;
const B: f64 = 0.19;
const C: f64 = 0.19;
const D: f64 = 0.05;

/// Rows kept per thread (a DFS stack or a triangle intersection revisits a few rows).
const CACHED_ROWS: usize = 8;

/// Rows at least this long are also kept in the thread's hub cache: the R-MAT hubs are in most
/// rows, so kernels that read a neighbour's row (triangle counting reads a prefix of it for every
/// edge) read them again and again, and generating a hub's row costs its whole length however
/// little of it the kernel reads.
const HUB_DEGREE: usize = 256;

/// Entries the hub cache holds per thread (64 MiB); when full, a longer row displaces the
/// shortest cached ones.
pub const HUB_CACHE_ENTRIES: usize = 1 << 24;

/// Identifies an [`Implicit`] graph in the per-thread row cache.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An implicit Kronecker graph on `2^scale` vertices.
#[derive(Debug)]
pub struct Implicit {
    id: u64,
    scale: u32,
    /// Generated edges, `edge_factor * 2^scale`.
    edges: f64,
    seed: u64,
    /// Internal (R-MAT) id to vertex label.
    labels: Scatter,
    /// Row `v` is `offsets[v]..offsets[v+1]` of the simulated neighbour array.
    offsets: Vec<u64>,
    /// 16-bit fixed-point thresholds: P(source bit 1 | destination bit b) and
    /// P(destination bit 1 | source bit b), per bit value.
    src_one: [u32; 2],
    dst_one: [u32; 2],
    /// The out- and in-degree distributions of an internal vertex with `k` one bits, at `[k]`:
    /// a vertex's means depend on that count only, so they are computed once, not per row.
    degree_dists: Vec<[Poisson; 2]>,
}

impl Clone for Implicit {
    fn clone(&self) -> Implicit {
        Implicit {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            labels: self.labels.clone(),
            offsets: self.offsets.clone(),
            degree_dists: self.degree_dists.clone(),
            ..*self
        }
    }
}

impl PartialEq for Implicit {
    fn eq(&self, o: &Implicit) -> bool {
        (self.scale, self.edges, self.seed, &self.offsets) == (o.scale, o.edges, o.seed, &o.offsets)
    }
}

/// The R-MAT draw of the other end of one of internal vertex `u`'s edges: bit by bit from the
/// top, the other end's bit is 1 with a probability that depends on `u`'s bit at that level
/// (16-bit fixed point, compared with 16 random bits; four levels per random word).
///
/// The four comparisons of a word are made at once, two in each half of a 64-bit word: per
/// 32-bit lane, `threshold + 0xffff - random` lies in `0..2^17` and has bit 16 set exactly
/// when `random < threshold`, with no borrow between lanes. A row computes its lanes'
/// thresholds once (they depend only on `u`'s bits), so a draw is a few operations per word.
struct EdgeDraw {
    /// Per group of four levels: the thresholds (plus `0xffff`) of levels 0 and 2 of the group
    /// in the low and high halves of the first word, of levels 1 and 3 in the second; 0 for
    /// levels past the scale.
    groups: [(u64, u64); 8],
    /// Groups in use: `scale / 4` rounded up.
    count: usize,
    /// Levels in the last group (1 to 4).
    last: u32,
}

/// The low 16 bits of each 32-bit half of a word: a lane's random bits, and what a threshold is
/// raised by.
const EDGE_LANES: u64 = 0x0000_ffff_0000_ffff;

impl EdgeDraw {
    /// The draw for `u` of a graph of `2^scale` vertices (`scale <= 32`), with `given[b]` the
    /// threshold for a level where `u`'s bit is `b`.
    fn new(given: &[u32; 2], u: u32, scale: u32) -> EdgeDraw {
        debug_assert!(scale <= 32);
        let threshold = |level: u32| -> u64 {
            if level < scale {
                u64::from(given[((u >> (scale - 1 - level)) & 1) as usize])
            } else {
                0
            }
        };
        let mut groups = [(0, 0); 8];
        let count = scale.div_ceil(4) as usize;
        for (j, g) in groups[..count].iter_mut().enumerate() {
            let l = 4 * j as u32;
            *g = (
                (threshold(l) | threshold(l + 2) << 32) + EDGE_LANES,
                (threshold(l + 1) | threshold(l + 3) << 32) + EDGE_LANES,
            );
        }
        EdgeDraw {
            groups,
            count,
            last: scale + 4 - 4 * (count.max(1) as u32),
        }
    }

    /// One draw: a random word per group of four levels from `rng`.
    #[inline]
    fn draw(&self, rng: &mut Rng) -> u32 {
        let nibble = |&(even, odd): &(u64, u64), bits: u64| -> u32 {
            let e = even - (bits & EDGE_LANES);
            let o = odd - ((bits >> 16) & EDGE_LANES);
            (((e >> 13) & 8) | ((o >> 14) & 4) | ((e >> 47) & 2) | ((o >> 48) & 1)) as u32
        };
        let Some((last, full)) = self.groups[..self.count].split_last() else {
            return 0;
        };
        let mut other = 0u32;
        for g in full {
            other = (other << 4) | nibble(g, rng.next_u64());
        }
        // The last group's levels are its nibble's top bits.
        let bits = nibble(last, rng.next_u64()) >> (4 - self.last);
        (other << self.last) | bits
    }
}

/// Entries the neighbour array is allocated for: the expected `2 * edges` plus eight standard
/// deviations of their Poisson total, so that a draw above it is practically impossible (and
/// if it happens the last rows are cut, keeping the bound).
pub fn max_entries(scale: u32, edge_factor: u32) -> u64 {
    let mean = (2 * edge_factor as u64) << scale;
    mean + 8 * (mean as f64).sqrt().ceil() as u64 + 64
}

impl Implicit {
    /// The graph of `seed` with `2^scale` vertices and `edge_factor * 2^scale` generated edges.
    /// Computes every vertex's degree (O(vertices), no edge is drawn).
    pub fn new(scale: u32, edge_factor: u32, seed: u64) -> Implicit {
        let n = 1u64 << scale;
        let mut seeds = Rng::new(seed, 3);
        let labels = Scatter::new(n, &mut seeds);
        let fixed = |p: f64| (p * 65536.0) as u32;
        let mut g = Implicit {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scale,
            edges: edge_factor as f64 * n as f64,
            seed: seeds.next_u64(),
            labels,
            offsets: Vec::new(),
            src_one: [fixed(C / (A + C)), fixed(D / (B + D))],
            dst_one: [fixed(B / (A + B)), fixed(D / (C + D))],
            degree_dists: Vec::new(),
        };
        g.degree_dists = (0..=scale as i32)
            .map(|ones| {
                let zeros = scale as i32 - ones;
                let out = g.edges * (A + B).powi(zeros) * (C + D).powi(ones);
                let inn = g.edges * (A + C).powi(zeros) * (B + D).powi(ones);
                [Poisson::new(out), Poisson::new(inn)]
            })
            .collect();
        let bound = max_entries(scale, edge_factor);
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut total = 0u64;
        for v in 0..n {
            offsets.push(total);
            let (out, inn) = g.degrees(&mut g.row_rng(g.internal(v as u32)), g.internal(v as u32));
            total = (total + out + inn).min(bound);
        }
        offsets.push(total);
        g.offsets = offsets;
        g
    }

    pub fn vertices(&self) -> u32 {
        (self.offsets.len() - 1) as u32
    }

    /// Entries of the neighbour array in use (the sum of the row lengths).
    pub fn entries(&self) -> u64 {
        *self.offsets.last().expect("n + 1 offsets")
    }

    /// Bytes of host memory the graph holds: the offsets.
    pub fn host_bytes(&self) -> u64 {
        self.offsets.capacity() as u64 * 8
    }

    #[inline]
    pub fn row(&self, v: u32) -> Range<u64> {
        self.offsets[v as usize]..self.offsets[v as usize + 1]
    }

    #[inline]
    pub fn degree(&self, v: u32) -> u64 {
        let r = self.row(v);
        r.end - r.start
    }

    fn internal(&self, v: u32) -> u32 {
        self.labels.invert(v as u64) as u32
    }

    fn row_rng(&self, u: u32) -> Rng {
        Rng::new(self.seed ^ mix64(u as u64 + 1), 4)
    }

    /// Out- and in-degree of internal vertex `u`: the first draws of its row's generator.
    fn degrees(&self, rng: &mut Rng, u: u32) -> (u64, u64) {
        let [out, inn] = &self.degree_dists[u.count_ones() as usize];
        (out.sample(rng), inn.sample(rng))
    }

    /// Vertex `v`'s neighbours, sorted, into `out` (cleared first).
    pub fn neighbours_into(&self, v: u32, out: &mut Vec<u32>) {
        out.clear();
        let u = self.internal(v);
        let mut rng = self.row_rng(u);
        let (d_out, d_in) = self.degrees(&mut rng, u);
        let len = self.degree(v) as usize;
        out.reserve(len);
        let (dst, src) = (
            EdgeDraw::new(&self.dst_one, u, self.scale),
            EdgeDraw::new(&self.src_one, u, self.scale),
        );
        for _ in 0..d_out {
            out.push(dst.draw(&mut rng));
        }
        for _ in 0..d_in {
            out.push(src.draw(&mut rng));
        }
        // Only the rows cut to keep the allocation bound are shorter than drawn.
        out.truncate(len);
        // The drawn internal ids to vertex labels, all at once (the permutation's rounds are
        // most of a row's time, and several values' rounds overlap).
        self.labels.apply_all(out);
        out.sort_unstable();
    }

    pub fn neighbours(&self, v: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.neighbours_into(v, &mut out);
        out
    }

    /// The entry at index `i` of the neighbour array, regenerating its row unless this thread
    /// read the row recently.
    pub fn neighbour(&self, i: u64) -> u32 {
        CACHE.with(|c| c.borrow_mut().get(self, i))
    }

    /// Run `f` on `v`'s row (sorted), regenerating it unless this thread read it recently; the
    /// row is then this thread's most recent.
    pub fn with_row<R>(&self, v: u32, f: impl FnOnce(&[u32]) -> R) -> R {
        if self.degree(v) == 0 {
            return f(&[]);
        }
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            c.touch(self, v);
            f(&c.rows[0].2)
        })
    }

    /// The vertex whose row holds index `i`.
    fn owner(&self, i: u64) -> u32 {
        (self.offsets.partition_point(|&o| o <= i) - 1) as u32
    }
}

/// A Poisson distribution, sampled by Knuth's product of uniforms for small means and the
/// normal approximation (Box-Muller, rounded, at least 0) above 64.
#[derive(Clone, Copy, Debug)]
struct Poisson {
    mean: f64,
    /// `e^-mean`: where Knuth's product stops.
    limit: f64,
}

impl Poisson {
    fn new(mean: f64) -> Poisson {
        Poisson {
            mean,
            limit: (-mean).exp(),
        }
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        let mean = self.mean;
        if mean < 64.0 {
            let (mut k, mut p) = (0u64, rng.unit());
            while p > self.limit {
                k += 1;
                p *= rng.unit();
            }
            k
        } else {
            let (u1, u2) = (1.0 - rng.unit(), rng.unit());
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            (mean + mean.sqrt() * z).round().max(0.0) as u64
        }
    }
}

/// A row in the recent rows: generated into a buffer of its own (reused for the next row
/// generated), or shared with the hub cache. Sharing matters: triangle counting reads a prefix
/// of a hub's row for each edge into the hub, and a copy would cost the whole row each time.
enum Row {
    Own(Vec<u32>),
    Hub(Rc<[u32]>),
}

impl Deref for Row {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match self {
            Row::Own(row) => row,
            Row::Hub(row) => row,
        }
    }
}

/// The rows this thread read last, most recent first, and the longest rows it read.
struct RowCache {
    rows: Vec<(u64, u64, Row)>,
    /// Graph id and vertex -> row, for rows of at least [`HUB_DEGREE`] entries, at most
    /// [`HUB_CACHE_ENTRIES`] entries in all.
    hubs: HashMap<(u64, u32), Rc<[u32]>>,
    /// The hub rows by length, shortest first: the next to make room.
    by_len: BTreeSet<(usize, (u64, u32))>,
    hub_entries: usize,
}

thread_local! {
    static CACHE: RefCell<RowCache> = RefCell::new(RowCache {
        rows: Vec::new(),
        hubs: HashMap::new(),
        by_len: BTreeSet::new(),
        hub_entries: 0,
    });
}

impl RowCache {
    fn get(&mut self, g: &Implicit, i: u64) -> u32 {
        let hit = self
            .rows
            .iter()
            .position(|(id, start, row)| *id == g.id && i.wrapping_sub(*start) < row.len() as u64);
        match hit {
            Some(k) => self.promote(k),
            None => self.fill(g, g.owner(i)),
        }
        let (_, start, row) = &self.rows[0];
        row[(i - start) as usize]
    }

    /// Make `v`'s row (not empty) the most recent, generating it if it is not here.
    fn touch(&mut self, g: &Implicit, v: u32) {
        let start = g.row(v).start;
        let hit = self
            .rows
            .iter()
            .position(|(id, s, row)| *id == g.id && *s == start && !row.is_empty());
        match hit {
            Some(k) => self.promote(k),
            None => self.fill(g, v),
        }
    }

    /// Make row `k` the most recent. A rotation moves only the rows more recent than it
    /// (triangle counting alternates between two rows: a swap), where a removal and an
    /// insertion would move every row twice.
    fn promote(&mut self, k: usize) {
        self.rows[..=k].rotate_right(1);
    }

    /// Generate `v`'s row as the most recent, dropping the least recent if full.
    fn fill(&mut self, g: &Implicit, v: u32) {
        let dropped = if self.rows.len() == CACHED_ROWS {
            self.rows.pop().map(|(_, _, row)| row)
        } else {
            None
        };
        let row = match self.hubs.get(&(g.id, v)) {
            Some(hub) => Row::Hub(Rc::clone(hub)),
            None => {
                let mut row = match dropped {
                    Some(Row::Own(buffer)) => buffer,
                    _ => Vec::new(),
                };
                g.neighbours_into(v, &mut row);
                self.keep_hub(g.id, v, &row);
                Row::Own(row)
            }
        };
        self.rows.insert(0, (g.id, g.row(v).start, row));
    }

    /// Keep a copy of `row` (vertex `v` of graph `id`) if it is a hub row and, with the cache
    /// full, longer than the rows it displaces.
    fn keep_hub(&mut self, id: u64, v: u32, row: &[u32]) {
        if row.len() < HUB_DEGREE || row.len() > HUB_CACHE_ENTRIES {
            return;
        }
        while self.hub_entries + row.len() > HUB_CACHE_ENTRIES {
            let &(len, key) = self.by_len.first().expect("over budget, so not empty");
            if len >= row.len() {
                return;
            }
            self.by_len.pop_first();
            self.hubs.remove(&key);
            self.hub_entries -= len;
        }
        self.hub_entries += row.len();
        self.by_len.insert((row.len(), (id, v)));
        self.hubs.insert((id, v), Rc::from(row));
    }
}

#[cfg(test)]
mod tests {
    use super::super::Csr;
    use super::*;

    /// The R-MAT draw one level at a time, as [`EdgeDraw`] defines it.
    fn draw_level_by_level(given: &[u32; 2], u: u32, scale: u32, rng: &mut Rng) -> u32 {
        let (mut other, mut bits) = (0u32, 0u64);
        for level in 0..scale {
            if level % 4 == 0 {
                bits = rng.next_u64();
            }
            let r = (bits & 0xffff) as u32;
            bits >>= 16;
            let mine = (u >> (scale - 1 - level)) & 1;
            other = (other << 1) | (r < given[mine as usize]) as u32;
        }
        other
    }

    proptest::proptest! {
        /// Four levels a word give the draws one level at a time gives, from the same random
        /// words, for every scale (partial last groups included) and thresholds up to 2^16.
        #[test]
        fn an_edge_drawn_four_levels_at_a_time_is_drawn_as_level_by_level(
            given in proptest::array::uniform2(0u32..=65536),
            u in proptest::prelude::any::<u32>(),
            scale in 0u32..=32,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let u = if scale == 32 { u } else { u & ((1u32 << scale) - 1) };
            let draw = EdgeDraw::new(&given, u, scale);
            let (mut a, mut b) = (Rng::new(seed, 4), Rng::new(seed, 4));
            for _ in 0..8 {
                proptest::prop_assert_eq!(
                    draw.draw(&mut a),
                    draw_level_by_level(&given, u, scale, &mut b)
                );
            }
        }
    }

    #[test]
    fn degree_distributions_are_the_r_mat_means_of_each_vertex() {
        // A vertex's expected out-degree is edges * P(source bits), in-degree edges *
        // P(destination bits): (A+B) or (C+D) per zero or one bit of its id. Equal to a few
        // ulps, not exactly: an optimised build may fold `powi` of the constants here at
        // compile time, which rounds differently from the library's `powi` at run time.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        let (scale, edge_factor) = (12, 16);
        let g = Implicit::new(scale, edge_factor, 7);
        assert_eq!(g.degree_dists.len(), scale as usize + 1);
        for u in [0u32, 1, 0b1011, (1 << scale) - 1] {
            let ones = u.count_ones() as i32;
            let zeros = scale as i32 - ones;
            let edges = edge_factor as f64 * (1u64 << scale) as f64;
            let out = edges * (A + B).powi(zeros) * (C + D).powi(ones);
            let inn = edges * (A + C).powi(zeros) * (B + D).powi(ones);
            let [o, i] = g.degree_dists[ones as usize];
            assert!(close(o.mean, out) && close(i.mean, inn), "vertex {u}");
            // The limits are those of the tables' own means.
            assert_eq!((o.limit, i.limit), ((-o.mean).exp(), (-i.mean).exp()));
        }
    }

    #[test]
    fn rows_are_deterministic_sorted_and_as_long_as_their_offsets() {
        let g = Implicit::new(10, 8, 42);
        let h = Implicit::new(10, 8, 42);
        assert!(g == h);
        assert!(g != Implicit::new(10, 8, 43));
        for v in 0..g.vertices() {
            let row = g.neighbours(v);
            assert_eq!(row, h.neighbours(v));
            assert_eq!(row.len() as u64, g.degree(v));
            assert!(row.windows(2).all(|w| w[0] <= w[1]));
            assert!(row.iter().all(|&w| w < g.vertices()));
            // Entry by entry through the cache, in any order.
            for (k, i) in g.row(v).rev().enumerate() {
                assert_eq!(g.neighbour(i), row[row.len() - 1 - k]);
            }
        }
        assert!(g.entries() <= max_entries(10, 8));
    }

    #[test]
    fn hub_rows_read_again_come_from_the_hub_cache_unchanged() {
        let g = Implicit::new(12, 16, 5);
        let hubs: Vec<u32> = (0..g.vertices())
            .filter(|&v| g.degree(v) >= HUB_DEGREE as u64)
            .collect();
        assert!(hubs.len() > CACHED_ROWS, "{} hubs", hubs.len());
        // Twice through every hub: the second pass finds them evicted from the recent rows.
        for _ in 0..2 {
            for &v in &hubs {
                let want = g.neighbours(v);
                let got: Vec<u32> = g.row(v).map(|i| g.neighbour(i)).collect();
                assert_eq!(got, want);
                assert_eq!(g.with_row(v, |r| r.to_vec()), want);
            }
        }
        CACHE.with(|c| {
            let c = c.borrow();
            assert!(hubs.iter().all(|&v| c.hubs.contains_key(&(g.id, v))));
            // The recent rows share the hub cache's rows rather than copy them.
            let (_, start, last) = &c.rows[0];
            let v = *hubs.last().unwrap();
            assert_eq!(*start, g.row(v).start);
            assert!(matches!(last, Row::Hub(r) if Rc::ptr_eq(r, &c.hubs[&(g.id, v)])));
            assert_eq!(
                c.hub_entries,
                c.hubs.values().map(|r| r.len()).sum::<usize>()
            );
        });
    }

    #[test]
    fn degrees_match_the_explicit_rmat_graph_in_aggregate() {
        let (scale, ef) = (14, 16);
        let n = 1usize << scale;
        // The explicit generator's edges before deduplication: each edge in both endpoints'
        // rows, as the implicit rows hold them.
        let mut rng = Rng::new(1, 2);
        let mut de = vec![0u64; n];
        for _ in 0..(ef as u64) << scale {
            let (u, v) = super::super::rmat::kronecker_edge(&mut rng, scale);
            de[u as usize] += 1;
            de[v as usize] += 1;
        }
        let implicit = Implicit::new(scale, ef, 1);
        let mut di: Vec<u64> = (0..n as u32).map(|v| implicit.degree(v)).collect();
        let (e, i) = (de.iter().sum::<u64>() as f64, implicit.entries() as f64);
        assert!((i / e - 1.0).abs() < 0.01, "implicit {i} vs explicit {e}");
        // The degree distribution's shape: the largest degrees and the share of isolated
        // vertices are alike.
        de.sort_unstable();
        di.sort_unstable();
        for q in [n - 1, n - 10, n - 100, n - 1000, n / 2] {
            let ratio = di[q] as f64 / de[q] as f64;
            assert!(
                (0.8..1.25).contains(&ratio),
                "rank {q}: {} vs {}",
                di[q],
                de[q]
            );
        }
        let zeros = |d: &[u64]| d.iter().filter(|&&x| x == 0).count() as f64 / n as f64;
        assert!(
            (zeros(&di) - zeros(&de)).abs() < 0.02,
            "{} vs {}",
            zeros(&di),
            zeros(&de)
        );
        // The stored explicit graph drops duplicates and self loops: fewer entries (a fifth at
        // this small scale, about 6 % at scale 20).
        let stored = Csr::rmat(scale, ef, 1).entries() as f64;
        assert!(
            i > stored && i / stored < 1.3,
            "implicit {i}, stored {stored}"
        );
        // Neighbours are skewed the same way: the most cited vertices are hubs.
        let mut hits = vec![0u64; n];
        for v in 0..n as u32 {
            for w in implicit.neighbours(v) {
                hits[w as usize] += 1;
            }
        }
        let top = (0..n as u32).max_by_key(|&v| hits[v as usize]).unwrap();
        assert!(
            implicit.degree(top) >= di[n - 20],
            "most cited vertex is a hub"
        );
    }
}
