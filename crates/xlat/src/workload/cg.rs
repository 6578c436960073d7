//! `cg`: the NPB CG kernel (NAS Parallel Benchmarks 3.x), the conjugate-gradient solver that
//! Gandhi et al. (MICRO'14) run as NPB:CG. Each outer iteration runs 25 CG iterations on a
//! sparse symmetric matrix in CSR form (`rowstr`, `colidx`, `a`); each CG iteration is a sparse
//! matrix-vector product `q = A·p`, which reads every stored entry and gathers `p` at its
//! column, then dot products and axpy updates of the dense vectors `z`, `r` and `p`. After the
//! 25 iterations the residual `r = A·z` is one more product, and the outer iteration ends by
//! normalising `z` into `x`.
//!
//! CG's control flow is fixed by its iteration counts, so no value steers it: the matrix and
//! the vectors exist only as simulated addresses. The column indices are real (the gathers
//! follow them) but derived on demand from a seeded hash, so a matrix of any size costs no host
//! memory. Row `i` holds `len(i)` entries, one in each of `len(i)` equal strata of the columns
//! (so a row's columns are sorted and distinct, as NPB's assembled rows are), the diagonal in
//! its own stratum. Rows come in pairs whose lengths add up to twice the mean, so
//! `rowstr[2k] = 2k·mean` exactly and the CSR offsets need no table either.
//!
//! With `threads`, every loop over the rows is split among the threads as NPB's OpenMP version
//! splits it (static schedule), with a barrier after each loop (its reduction or its result is
//! needed by the next).

use super::emit::{Array, Emitter, SimHeap, Stop, ThreadedSource};
use super::index::mix64;
use crate::addr::page_rounded;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use serde::{Deserialize, Serialize};

/// CG iterations per outer iteration (NPB's `cgitmax`).
pub const CG_ITERATIONS: u32 = 25;

/// One NPB CG problem class: rows, nonzeros per generated vector, outer iterations and the
/// eigenvalue shift (which only changes values, listed for completeness).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: &'static str,
    pub na: u64,
    pub nonzer: u64,
    pub niter: u32,
    pub shift: u32,
}

/// NPB 3.x's classes S to C.
pub const CLASSES: [Class; 5] = [
    Class {
        name: "S",
        na: 1400,
        nonzer: 7,
        niter: 15,
        shift: 10,
    },
    Class {
        name: "W",
        na: 7000,
        nonzer: 8,
        niter: 15,
        shift: 12,
    },
    Class {
        name: "A",
        na: 14000,
        nonzer: 11,
        niter: 15,
        shift: 20,
    },
    Class {
        name: "B",
        na: 75000,
        nonzer: 13,
        niter: 75,
        shift: 60,
    },
    Class {
        name: "C",
        na: 150000,
        nonzer: 15,
        niter: 75,
        shift: 110,
    },
];

/// Bytes of one matrix value and one vector element (doubles).
const VALUE_BYTES: u64 = 8;
/// Bytes of one column index (NPB's `int`).
const COLIDX_BYTES: u64 = 4;
/// Largest matrix accepted (entries).
const MAX_NNZ: u64 = 1 << 40;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgConfig {
    /// NPB problem class: `S`, `W`, `A`, `B` or `C` (rows, nonzeros and outer iterations).
    #[serde(default = "default_class")]
    pub class: String,
    /// Rows of the matrix; 0 takes the class's (`footprint` sets it, keeping the class's
    /// nonzeros per row).
    #[serde(default)]
    pub na: u64,
    /// Memory references of the region of interest to emit.
    #[serde(default = "super::index::default_refs")]
    pub references: u64,
    /// Map the memory before the first reference (NPB builds the matrix first).
    #[serde(default = "super::index::default_populate")]
    pub populate: bool,
    /// Software threads of the one process, each on its own core, sharing the rows (1 to 64).
    #[serde(default = "super::one_thread")]
    pub threads: u32,
}

fn default_class() -> String {
    "B".into()
}

impl CgConfig {
    /// The class named by `class`, `None` if it names none.
    pub fn class(&self) -> Option<Class> {
        CLASSES
            .iter()
            .copied()
            .find(|c| c.name.eq_ignore_ascii_case(&self.class))
    }

    /// The matrix shape: the class's, with `na` rows if set.
    fn shape(&self) -> Option<Shape> {
        let c = self.class()?;
        let na = if self.na == 0 { c.na } else { self.na };
        Some(Shape::new(na, c.nonzer))
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        let Some(shape) = self.shape() else {
            let names: Vec<&str> = CLASSES.iter().map(|c| c.name).collect();
            return Err(Error::config(
                format!("{path}.class"),
                format!(
                    "must be one of {} (NPB's classes), got `{}`",
                    names.join(", "),
                    self.class
                ),
            ));
        };
        if shape.na < 2 * shape.mean {
            return Err(Error::config(
                format!("{path}.na"),
                format!(
                    "must be at least {} (twice the {} entries of an average row of class {}), \
                     got {}",
                    2 * shape.mean,
                    shape.mean,
                    self.class,
                    shape.na
                ),
            ));
        }
        if shape.nnz().is_none_or(|n| n > MAX_NNZ) {
            return Err(Error::config(
                format!("{path}.na"),
                format!("{} rows make a matrix beyond 2^40 entries", shape.na),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)?;
        super::threads_in_range(format!("{path}.threads"), self.threads)
    }

    /// Bytes of the matrix and the five vectors, rounded to pages (`None` if invalid).
    pub fn footprint(&self) -> Option<u64> {
        self.shape()?.bytes()
    }

    /// Bytes of the class's smallest matrix (`na` twice the mean row).
    pub fn min_footprint(&self) -> Option<u64> {
        let nonzer = self.class()?.nonzer;
        Shape::new(2 * Shape::new(1, nonzer).mean, nonzer).bytes()
    }

    /// Set `na` to the most rows whose data fits in `bytes`; `None` if not even the smallest
    /// matrix of the class fits.
    pub fn fit(&mut self, bytes: u64) -> Option<u64> {
        let nonzer = self.class()?.nonzer;
        let at = |na: u64| Shape::new(na, nonzer).bytes().unwrap_or(u64::MAX);
        let min = 2 * Shape::new(1, nonzer).mean;
        let hi = bytes / (COLIDX_BYTES + VALUE_BYTES) + 1;
        self.na = super::footprint::largest_fitting(min, hi, bytes, at)?;
        Some(at(self.na))
    }
}

/// The matrix's shape: `na` rows of `mean` entries on average (NPB's bound on a row,
/// `(nonzer + 1)^2`: `makea` adds `na` outer products of vectors with `nonzer + 1` nonzeros).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub na: u64,
    pub mean: u64,
}

impl Shape {
    pub fn new(na: u64, nonzer: u64) -> Shape {
        Shape {
            na,
            mean: (nonzer + 1) * (nonzer + 1),
        }
    }

    /// Stored entries: every pair of rows holds twice the mean, an odd last row the mean.
    pub fn nnz(&self) -> Option<u64> {
        self.na.checked_mul(self.mean)
    }

    /// Bytes of `rowstr`: NPB's `int` while the offsets fit in one, 8 bytes beyond.
    fn rowstr_bytes(&self) -> u64 {
        if self.nnz().is_some_and(|n| n < 1 << 31) {
            4
        } else {
            8
        }
    }

    fn bytes(&self) -> Option<u64> {
        let nnz = self.nnz()?;
        let vector = page_rounded(self.na.checked_mul(VALUE_BYTES)?);
        Some(
            page_rounded(nnz.checked_mul(COLIDX_BYTES)?)
                + page_rounded(nnz.checked_mul(VALUE_BYTES)?)
                + page_rounded((self.na + 1) * self.rowstr_bytes())
                + 5 * vector,
        )
    }
}

/// The implicit sparse matrix: row lengths and column indices from a seeded hash.
#[derive(Clone, Copy, Debug)]
pub struct Matrix {
    pub shape: Shape,
    seed: u64,
}

impl Matrix {
    pub fn new(shape: Shape, seed: u64) -> Matrix {
        Matrix {
            shape,
            seed: mix64(seed ^ 0xC6A4_A793_5BD1_E995),
        }
    }

    fn hash(&self, a: u64, b: u64) -> u64 {
        mix64(self.seed ^ mix64(a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b))
    }

    /// How far row pair `k`'s first row is below the mean (its second is as far above).
    fn spread(&self, pair: u64) -> u64 {
        self.hash(pair, u64::MAX) % (self.shape.mean / 2 + 1)
    }

    /// Entries of row `i`: between half and one and a half times the mean.
    pub fn len(&self, i: u64) -> u64 {
        let m = self.shape.mean;
        if i % 2 == 1 {
            m + self.spread(i / 2)
        } else if i + 1 == self.shape.na {
            // An unpaired last row.
            m
        } else {
            m - self.spread(i / 2)
        }
    }

    /// `rowstr[i]`: where row `i`'s entries start (`rowstr[na]` = nnz).
    pub fn rowstr(&self, i: u64) -> u64 {
        let pairs_before = i / 2;
        let start = 2 * pairs_before * self.shape.mean;
        if i % 2 == 1 {
            start + self.len(i - 1)
        } else {
            start
        }
    }

    /// `colidx` of row `i`'s entry `j`: one column of the `j`-th of `len(i)` equal strata of
    /// `0..na`, the diagonal in the stratum that holds it.
    pub fn colidx(&self, i: u64, j: u64) -> u64 {
        let (na, len) = (self.shape.na, self.len(i));
        let lo = j * na / len;
        let hi = (j + 1) * na / len;
        if (lo..hi).contains(&i) {
            return i;
        }
        lo + self.hash(i, j) % (hi - lo)
    }
}

/// The CSR arrays and the dense vectors in simulated memory.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub rowstr: Array,
    pub colidx: Array,
    pub a: Array,
    pub x: Array,
    pub z: Array,
    pub p: Array,
    pub q: Array,
    pub r: Array,
}

impl Layout {
    pub fn alloc(os: &mut dyn AddressSpaces, heap: &mut SimHeap, shape: Shape) -> Result<Layout> {
        let nnz = shape.nnz().expect("validated");
        let na = shape.na;
        Ok(Layout {
            colidx: heap.array(os, nnz, COLIDX_BYTES)?,
            a: heap.array(os, nnz, VALUE_BYTES)?,
            rowstr: heap.array(os, na + 1, shape.rowstr_bytes())?,
            x: heap.array(os, na, VALUE_BYTES)?,
            z: heap.array(os, na, VALUE_BYTES)?,
            p: heap.array(os, na, VALUE_BYTES)?,
            q: heap.array(os, na, VALUE_BYTES)?,
            r: heap.array(os, na, VALUE_BYTES)?,
        })
    }
}

type Emit<T> = std::result::Result<T, Stop>;

pub fn build(
    cfg: &CgConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let shape = cfg
        .shape()
        .ok_or_else(|| Error::config("workload.class", "unknown"))?;
    let niter = cfg.class().map_or(1, |c| c.niter);
    let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
    let layout = Layout::alloc(os, &mut heap, shape)?;
    let m = Matrix::new(shape, seed);
    Ok(ThreadedSource::team(pid, cfg.references, cfg.threads, |_| {
        move |e: &mut Emitter| {
            let cg = Cg { m, l: layout };
            cg.setup(e)?;
            for _ in 0..niter {
                cg.outer_iteration(e)?;
            }
            Ok(())
        }
    })
    .marks_roi())
}

/// One thread's view of the solver: the matrix and where everything lives.
#[derive(Clone, Copy, Debug)]
pub struct Cg {
    pub m: Matrix,
    pub l: Layout,
}

/// Load element `i` of `a`.
fn ld(e: &mut Emitter, a: &Array, i: u64) -> Emit<()> {
    e.load(a.at(i), a.elem as u8).map(drop)
}

fn st(e: &mut Emitter, a: &Array, i: u64) -> Emit<()> {
    e.store(a.at(i), a.elem as u8).map(drop)
}

impl Cg {
    fn rows(&self, e: &Emitter) -> std::ops::Range<u64> {
        e.static_share(0..self.m.shape.na)
    }

    /// The set-up's last loop, NPB's `x = 1` just before its timer starts; the region of
    /// interest (the timed iterations) begins after it. What comes before it in NPB is not
    /// emitted: `makea`'s construction of the matrix, the zeroing of `q`, `z`, `r`, `p` and the
    /// untimed warm-up solve, which NPB runs to map every page before timing. `populate` maps
    /// the memory in their place; without it, first touches fault inside the region.
    pub fn setup(&self, e: &mut Emitter) -> Emit<()> {
        for j in self.rows(e) {
            e.instr(2);
            st(e, &self.l.x, j)?;
        }
        e.barrier()?;
        e.roi();
        Ok(())
    }

    /// `out = A·v` over this thread's rows: per row its end offset, then per entry the column
    /// index, the value, and `v` at that column (its address comes from the index just loaded).
    pub fn spmv(&self, e: &mut Emitter, v: &Array, out: &Array) -> Emit<()> {
        let l = &self.l;
        let rows = self.rows(e);
        if rows.is_empty() {
            return e.barrier();
        }
        ld(e, &l.rowstr, rows.start)?;
        for i in rows {
            e.instr(2);
            ld(e, &l.rowstr, i + 1)?;
            let start = self.m.rowstr(i);
            for j in 0..self.m.len(i) {
                let k = start + j;
                e.instr(3);
                let col = e.load(l.colidx.at(k), COLIDX_BYTES as u8)?;
                ld(e, &l.a, k)?;
                e.load_dep(v.at(self.m.colidx(i, j)), VALUE_BYTES as u8, col)?;
            }
            e.instr(1);
            st(e, out, i)?;
        }
        e.barrier()
    }

    /// A loop over this thread's rows that loads `reads` and then stores `writes` at each row
    /// (a dot product has no stores; its reduction is the barrier after it).
    fn vector_loop(&self, e: &mut Emitter, reads: &[&Array], writes: &[&Array]) -> Emit<()> {
        for j in self.rows(e) {
            e.instr(2 + reads.len() as u32);
            for a in reads {
                ld(e, a, j)?;
            }
            for a in writes {
                st(e, a, j)?;
            }
        }
        e.barrier()
    }

    /// NPB's `conj_grad`: 25 CG iterations, then the residual's product and norm.
    pub fn conj_grad(&self, e: &mut Emitter) -> Emit<()> {
        let l = self.l;
        let (x, z, p, q, r) = (&l.x, &l.z, &l.p, &l.q, &l.r);
        // q = z = 0, r = x, p = r; then rho = r·r.
        self.vector_loop(e, &[x], &[q, z, r, p])?;
        self.vector_loop(e, &[r], &[])?;
        for _ in 0..CG_ITERATIONS {
            self.spmv(e, p, q)?;
            // d = p·q, alpha = rho / d.
            self.vector_loop(e, &[p, q], &[])?;
            // z += alpha·p, r -= alpha·q.
            self.vector_loop(e, &[z, p, r, q], &[z, r])?;
            // rho = r·r, beta = rho / rho0.
            self.vector_loop(e, &[r], &[])?;
            // p = r + beta·p.
            self.vector_loop(e, &[r, p], &[p])?;
        }
        // r = A·z, and the residual norm ||x - r||.
        self.spmv(e, z, r)?;
        self.vector_loop(e, &[x, r], &[])
    }

    /// One timed iteration of NPB's main loop: the solve, then `zeta` from `x·z` and `z·z`, and
    /// `x = z / ||z||`.
    pub fn outer_iteration(&self, e: &mut Emitter) -> Emit<()> {
        self.conj_grad(e)?;
        let l = self.l;
        self.vector_loop(e, &[&l.x, &l.z], &[])?;
        self.vector_loop(e, &[&l.z], &[&l.x])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Op, Record, RecordSource, Roi};
    use crate::workload::testutil;

    fn cfg(class: &str, na: u64, threads: u32) -> CgConfig {
        CgConfig {
            class: class.into(),
            na,
            references: u64::MAX,
            populate: false,
            threads,
        }
    }

    fn small() -> (Cg, crate::os::Os<crate::pt::radix::RadixPageTable>) {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let shape = Shape::new(300, 7);
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let l = Layout::alloc(&mut os, &mut heap, shape).unwrap();
        (
            Cg {
                m: Matrix::new(shape, 5),
                l,
            },
            os,
        )
    }

    #[test]
    fn rows_are_sorted_distinct_columns_with_the_diagonal_and_offsets_add_up() {
        for na in [128, 129, 300, 1401] {
            let m = Matrix::new(Shape::new(na, 7), 3);
            let mut total = 0;
            for i in 0..na {
                assert_eq!(m.rowstr(i), total, "na {na} row {i}");
                let len = m.len(i);
                assert!((32..=96).contains(&len), "row {i}: {len}");
                let cols: Vec<u64> = (0..len).map(|j| m.colidx(i, j)).collect();
                assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {i}: {cols:?}");
                assert!(cols.contains(&i) && cols.iter().all(|&c| c < na));
                total += len;
            }
            assert_eq!(m.rowstr(na), total);
            assert_eq!(total, m.shape.nnz().unwrap(), "na {na}");
        }
        // Another seed, other columns.
        let (a, b) = (
            Matrix::new(Shape::new(300, 7), 1),
            Matrix::new(Shape::new(300, 7), 2),
        );
        assert!((0..300).any(|i| a.colidx(i, 0) != b.colidx(i, 0) || a.len(i) != b.len(i)));
    }

    #[test]
    fn a_product_reads_every_entry_once_and_gathers_at_its_column() {
        let (cg, _os) = small();
        let recs = testutil::run(move |e| cg.spmv(e, &cg.l.p, &cg.l.q));
        let l = cg.l;
        let nnz = cg.m.shape.nnz().unwrap();
        let in_array =
            |a: &Array, r: &Record| (a.base.0..a.base.0 + a.bytes()).contains(&r.vaddr.0);
        // Exactly nnz column indices, in CSR order, each followed by its value and the gather.
        let colidx: Vec<usize> = (0..recs.len())
            .filter(|&k| in_array(&l.colidx, &recs[k]))
            .collect();
        assert_eq!(colidx.len() as u64, nnz);
        let mut k = 0;
        for i in 0..cg.m.shape.na {
            for j in 0..cg.m.len(i) {
                let at = colidx[k as usize];
                assert_eq!(recs[at].vaddr, l.colidx.at(k));
                assert_eq!(recs[at + 1].vaddr, l.a.at(k));
                let gather = recs[at + 2];
                assert_eq!(gather.vaddr, l.p.at(cg.m.colidx(i, j)));
                assert_eq!(gather.dep, 2, "the gather's address is the index loaded");
                k += 1;
            }
        }
        // Every row's end offset is loaded and its result stored; nothing else is touched.
        let rowstr = recs.iter().filter(|r| in_array(&l.rowstr, r)).count() as u64;
        assert_eq!(rowstr, cg.m.shape.na + 1);
        assert_eq!(recs[0].vaddr, l.rowstr.at(0));
        let stores: Vec<u64> = recs
            .iter()
            .filter(|r| r.op == Op::Store)
            .map(|r| r.vaddr.0)
            .collect();
        let want: Vec<u64> = (0..cg.m.shape.na).map(|i| l.q.at(i).0).collect();
        assert_eq!(stores, want);
        assert_eq!(recs.len() as u64, 3 * nnz + 2 * cg.m.shape.na + 1);
    }

    #[test]
    fn the_region_of_interest_begins_after_the_initialisation() {
        let c = cfg("S", 0, 1);
        c.validate("workload").unwrap();
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut src = build(&c, &mut os, pid, 1).unwrap();
        let recs = testutil::drain(&mut src, 4096);
        // x = 1 before it.
        assert_eq!(src.roi(), Roi::At(1400));
        assert!(recs[..1400].iter().all(|r| r.op == Op::Store));
        // Then 15 outer iterations, each 26 products and the vector loops around them.
        let nnz = 1400 * 64;
        let per_product = 3 * nnz + 2 * 1400 + 1;
        let vector_refs = 1400 * (5 + 1 + 25 * (2 + 6 + 1 + 3) + 2 + 2 + 2);
        assert_eq!(recs.len() - 1400, 15 * (26 * per_product + vector_refs));
        // Every address inside an allocation.
        let vmas = os.vmas(pid).unwrap();
        for r in &recs {
            let page = r.vaddr.0 >> 12;
            assert!(vmas.iter().any(|v| (v.start.0..v.end.0).contains(&page)));
        }
    }

    #[test]
    fn a_team_splits_the_rows_and_touches_what_one_thread_does() {
        let run = |threads, seed| {
            let mut c = cfg("S", 200, threads);
            c.references = 1_200_000;
            let mut os = testutil::os(64);
            let pid = os.spawn().unwrap();
            testutil::drain_owned(build(&c, &mut os, pid, seed).unwrap())
        };
        let alone = run(1, 4);
        assert_eq!(alone, run(1, 4), "deterministic");
        assert_ne!(
            testutil::stream_hash(&alone),
            testutil::stream_hash(&run(1, 5))
        );
        let team = run(3, 4);
        let rowstr = cg_layout_rowstr(200);
        // The references of the first outer iteration, sorted, but for `rowstr`: each thread
        // loads the start offset of its share once per product.
        let first = |recs: &[Record], threads: usize| {
            let one = 200 + 26 * (3 * 12_800 + 401 + (threads - 1)) + 200 * 312;
            assert!(recs.len() >= one);
            let mut v: Vec<(u64, bool)> = recs[..one]
                .iter()
                .filter(|r| !rowstr.contains(&r.vaddr.0))
                .map(|r| (r.vaddr.0, r.op == Op::Store))
                .collect();
            v.sort_unstable();
            v
        };
        assert!(
            first(&team, 3) == first(&alone, 1),
            "the team's first iteration differs"
        );
        assert_eq!(
            testutil::per_core(&team)
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }

    /// Where `rowstr` of a class S matrix of `na` rows lies, as `build` allocates it.
    fn cg_layout_rowstr(na: u64) -> std::ops::Range<u64> {
        let mut os = testutil::os(64);
        let pid = os.spawn().unwrap();
        let mut heap = SimHeap::new(pid, MapKind::Anon, false);
        let l = Layout::alloc(&mut os, &mut heap, Shape::new(na, 7)).unwrap();
        l.rowstr.base.0..l.rowstr.base.0 + l.rowstr.bytes()
    }

    #[test]
    fn classes_and_footprints() {
        let b = cfg("B", 0, 1);
        b.validate("w").unwrap();
        // Class B: 75 000 rows of 196 entries, 12 bytes each, and five vectors.
        let fp = b.footprint().unwrap();
        assert!((176_000_000..180_000_000).contains(&fp), "{fp}");
        let mut c = cfg("C", 0, 1);
        let got = c.fit(8 << 30).unwrap();
        assert!(got <= 8 << 30 && got > (8 << 30) - 4 * 4096 * 2, "{got}");
        assert_eq!(c.footprint(), Some(got));
        assert!(cfg("c", 0, 1).class().is_some());
        // Beyond 2^31 entries the offsets are 8 bytes wide.
        assert_eq!(Shape::new(75_000_000, 15).rowstr_bytes(), 8);
        assert!(cfg("S", 0, 1).fit(1000).is_none());
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let err = |c: CgConfig| c.validate("workload").unwrap_err().to_string();
        let e = err(cfg("D", 0, 1));
        assert!(
            e.contains("workload.class") && e.contains("S, W, A, B, C"),
            "{e}"
        );
        assert!(err(cfg("S", 100, 1)).contains("workload.na"));
        assert!(err(cfg("S", 1 << 40, 1)).contains("workload.na"));
        assert!(err(cfg("S", 0, 0)).contains("workload.threads"));
        assert!(err(CgConfig {
            references: 0,
            ..cfg("S", 0, 1)
        })
        .contains("workload.references"));
        let e = toml::from_str::<CgConfig>("klass = \"A\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("klass"), "{e}");
    }
}
