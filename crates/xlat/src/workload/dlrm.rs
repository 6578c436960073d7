//! DLRM's embedding stage: SparseLengthsSum (SLS, PyTorch's `EmbeddingBag(mode="sum")`) over
//! several embedding tables, the memory-bound part of recommendation inference that Utopia
//! (§7) evaluates on.
//!
//! For every table and every sample of a batch, SLS reads the sample's length, then for each of
//! its `pooling` lookups reads the row index from the indices tensor (sequential) and sums the
//! addressed row (`dim` f32) into the sample's output vector. Row addresses come from loaded
//! indices, so every row load depends on its index load. Row popularity is Zipf (embedding
//! accesses are heavily skewed), with a seeded permutation scattering the hot rows over the
//! table.

use super::dist::{Scatter, Zipf};
use super::emit::{Array, Emitter, SimHeap, Stop, ThreadedSource};
use super::lines::line_pieces;
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DlrmConfig {
    /// Embedding tables (one SLS operator each).
    #[serde(default = "default_tables")]
    pub tables: u64,
    /// Rows per table.
    #[serde(default = "default_rows")]
    pub rows: u64,
    /// Embedding dimension (f32 elements per row).
    #[serde(default = "default_dim")]
    pub dim: u64,
    /// Samples per batch.
    #[serde(default = "default_batch")]
    pub batch: u64,
    /// Lookups per sample and table (the bag size).
    #[serde(default = "default_pooling")]
    pub pooling: u64,
    /// Zipf exponent of row popularity.
    #[serde(default = "default_alpha")]
    pub zipf_alpha: f64,
    /// Memory references to emit.
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the tables before the first reference, as model loading does.
    #[serde(default = "default_populate")]
    pub populate: bool,
}

fn default_tables() -> u64 {
    8
}
fn default_rows() -> u64 {
    1 << 20
}
fn default_dim() -> u64 {
    64
}
fn default_batch() -> u64 {
    64
}
fn default_pooling() -> u64 {
    80
}
fn default_alpha() -> f64 {
    1.05
}
fn default_refs() -> u64 {
    20_000_000
}
fn default_populate() -> bool {
    true
}

/// Largest embedding footprint accepted (16 TiB): beyond any simulated memory.
const MAX_TABLE_BYTES: u64 = 1 << 44;

impl DlrmConfig {
    pub fn validate(&self, path: &str) -> Result<()> {
        for (key, v) in [
            ("tables", self.tables),
            ("rows", self.rows),
            ("dim", self.dim),
            ("batch", self.batch),
            ("pooling", self.pooling),
            ("references", self.references),
        ] {
            super::nonzero(format!("{path}.{key}"), v)?;
        }
        let total = self
            .tables
            .checked_mul(self.rows)
            .and_then(|r| r.checked_mul(self.row_bytes()));
        if total.is_none_or(|b| b > MAX_TABLE_BYTES) {
            return Err(Error::config(
                format!("{path}.rows"),
                "tables * rows * dim * 4 bytes exceeds 16 TiB",
            ));
        }
        if self.dim > 1 << 16 {
            return Err(Error::config(
                format!("{path}.dim"),
                format!("must be at most 65536, got {}", self.dim),
            ));
        }
        if self.tables * self.batch * self.pooling > 1 << 32 {
            return Err(Error::config(
                format!("{path}.pooling"),
                "tables * batch * pooling indices per batch exceed 2^32",
            ));
        }
        if !(self.zipf_alpha.is_finite() && self.zipf_alpha >= 0.0) {
            return Err(Error::config(
                format!("{path}.zipf_alpha"),
                format!("must be a finite number >= 0, got {}", self.zipf_alpha),
            ));
        }
        Ok(())
    }

    fn row_bytes(&self) -> u64 {
        self.dim * 4
    }
}

/// The row indices of the input batches: Zipf ranks mapped through each table's own seeded
/// permutation. The producer and the tests draw the same sequence from the same seed.
pub struct IndexStream {
    zipf: Zipf,
    scatter: Vec<Scatter>,
    rng: Rng,
}

impl IndexStream {
    pub fn new(cfg: &DlrmConfig, seed: u64) -> IndexStream {
        let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
        let scatter = (0..cfg.tables)
            .map(|_| Scatter::new(cfg.rows, &mut rng))
            .collect();
        IndexStream {
            zipf: Zipf::new(cfg.rows, cfg.zipf_alpha),
            scatter,
            rng,
        }
    }

    /// Tables the stream draws for (one permutation each: its host state).
    #[cfg(test)]
    pub fn tables(&self) -> usize {
        self.scatter.len()
    }

    /// The next row looked up in `table`.
    pub fn next(&mut self, table: u64) -> u64 {
        self.scatter[table as usize].apply(self.zipf.sample(&mut self.rng))
    }
}

/// Where SLS's tensors live in the simulated process.
#[derive(Clone, Debug)]
pub struct Layout {
    pub tables: Vec<Array>,
    /// int64 row indices of one batch, table-major (Caffe2/PyTorch SLS input).
    pub indices: Array,
    /// int32 bag lengths of one batch.
    pub lengths: Array,
    /// f32 pooled vectors, one per table and sample.
    pub output: Array,
}

impl Layout {
    pub fn alloc(cfg: &DlrmConfig, os: &mut dyn AddressSpaces, pid: u16) -> Result<Layout> {
        let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
        let tables = (0..cfg.tables)
            .map(|_| heap.array(os, cfg.rows, cfg.row_bytes()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Layout {
            tables,
            indices: heap.array(os, cfg.tables * cfg.batch * cfg.pooling, 8)?,
            lengths: heap.array(os, cfg.tables * cfg.batch, 4)?,
            output: heap.array(os, cfg.tables * cfg.batch, cfg.row_bytes())?,
        })
    }
}

/// Builds the DLRM embedding stage in process `pid` and returns its record stream.
pub fn build(
    cfg: &DlrmConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let Layout {
        tables,
        indices,
        lengths,
        output,
    } = Layout::alloc(cfg, os, pid)?;
    let row_bytes = cfg.row_bytes();
    let cfg = cfg.clone();
    Ok(ThreadedSource::spawn(
        pid,
        cfg.references,
        move |e: &mut Emitter| -> std::result::Result<(), Stop> {
            let mut input = IndexStream::new(&cfg, seed);
            // Inference serves batch after batch; the input pipeline refills the indices and
            // lengths tensors in place between batches.
            loop {
                let mut pos = 0;
                for (t, table) in tables.iter().enumerate() {
                    for s in 0..cfg.batch {
                        let sample = t as u64 * cfg.batch + s;
                        // Loop bookkeeping, then the bag length.
                        e.instr(2);
                        e.load(lengths.at(sample), 4)?;
                        for _ in 0..cfg.pooling {
                            let row = input.next(t as u64);
                            e.instr(2);
                            let index = e.load(indices.at(pos), 8)?;
                            pos += 1;
                            // Bounds check and row address computation.
                            e.instr(3);
                            for (va, bytes) in line_pieces(table.at(row), row_bytes) {
                                e.load_dep(va, bytes, index)?;
                                // One vector add per 32 bytes (AVX2) into the accumulators.
                                e.instr(u32::from(bytes).div_ceil(32));
                            }
                        }
                        for (va, bytes) in line_pieces(output.at(sample), row_bytes) {
                            e.store(va, bytes)?;
                        }
                    }
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Op;
    use crate::workload::testutil::{drain, small_os, stream_hash, vma_bytes};

    fn tiny() -> DlrmConfig {
        DlrmConfig {
            tables: 2,
            rows: 1000,
            dim: 20, // 80-byte rows straddle cache lines
            batch: 3,
            pooling: 4,
            zipf_alpha: 1.05,
            references: 5_000,
            populate: true,
        }
    }

    fn run(cfg: &DlrmConfig, seed: u64) -> (Vec<crate::trace::Record>, Layout) {
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        let mut src = build(cfg, &mut os, pid, seed).unwrap();
        // The same allocations in a fresh OS land at the same addresses.
        let mut fresh = small_os();
        let pid = fresh.spawn().unwrap();
        let layout = Layout::alloc(cfg, &mut fresh, pid).unwrap();
        (drain(&mut src, 333), layout)
    }

    #[test]
    fn rows_read_are_the_rows_of_the_indices_loaded() {
        let cfg = tiny();
        let (recs, layout) = run(&cfg, 9);
        assert_eq!(recs.len(), 5_000);
        let Layout {
            tables,
            indices,
            lengths,
            output,
        } = layout;
        let mut input = IndexStream::new(&cfg, 9);
        // Reference SLS: the exact access sequence, batch after batch.
        let mut want = Vec::new();
        'outer: loop {
            let mut pos = 0;
            for (t, table) in tables.iter().enumerate() {
                for s in 0..cfg.batch {
                    let sample = t as u64 * cfg.batch + s;
                    want.push((lengths.at(sample).0, Op::Load, 0));
                    for _ in 0..cfg.pooling {
                        let row = input.next(t as u64);
                        want.push((indices.at(pos).0, Op::Load, 0));
                        pos += 1;
                        let start = table.at(row).0;
                        // 80-byte rows: two or three line pieces, each dependent on the index.
                        let mut at = start;
                        let mut k = 1;
                        while at < start + 80 {
                            want.push((at, Op::Load, k));
                            at = (at / 64 + 1) * 64;
                            k += 1;
                        }
                    }
                    let out = output.at(sample).0;
                    let mut at = out;
                    while at < out + 80 {
                        want.push((at, Op::Store, 0));
                        at = (at / 64 + 1) * 64;
                    }
                    if want.len() >= recs.len() {
                        break 'outer;
                    }
                }
            }
        }
        let got: Vec<_> = recs.iter().map(|r| (r.vaddr.0, r.op, r.dep)).collect();
        assert_eq!(got[..], want[..recs.len()]);
        // Row pieces cover exactly the row's 80 bytes.
        let first_row: u32 = recs[2..]
            .iter()
            .take_while(|r| r.dep > 0)
            .map(|r| r.size as u32)
            .sum();
        assert_eq!(first_row, 80);
    }

    #[test]
    fn popular_rows_are_scattered_and_skewed() {
        let cfg = DlrmConfig {
            rows: 1 << 16,
            ..tiny()
        };
        let mut input = IndexStream::new(&cfg, 1);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..100_000 {
            *counts.entry(input.next(0)).or_insert(0u32) += 1;
        }
        let mut by_count: Vec<_> = counts.into_iter().collect();
        by_count.sort_by_key(|&(row, c)| (std::cmp::Reverse(c), row));
        // Skewed: the hottest row alone takes several percent of the lookups ...
        assert!(by_count[0].1 > 5_000, "{:?}", &by_count[..3]);
        // ... and the ten hottest rows are not the first ten rows of the table.
        assert!(by_count[..10].iter().any(|&(row, _)| row >= 10));
    }

    #[test]
    fn deterministic_per_seed() {
        let cfg = tiny();
        let a = stream_hash(&run(&cfg, 4).0);
        assert_eq!(a, stream_hash(&run(&cfg, 4).0));
        assert_ne!(a, stream_hash(&run(&cfg, 5).0));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let check = |f: fn(&mut DlrmConfig), key: &str| {
            let mut c = tiny();
            f(&mut c);
            let err = c.validate("workload").unwrap_err().to_string();
            assert!(err.contains(&format!("`workload.{key}`")), "{err}");
        };
        check(|c| c.rows = 0, "rows");
        check(|c| c.pooling = 0, "pooling");
        check(|c| c.zipf_alpha = -1.0, "zipf_alpha");
        check(|c| c.zipf_alpha = f64::NAN, "zipf_alpha");
        check(|c| c.rows = u64::MAX, "rows");
        assert!(tiny().validate("workload").is_ok());
    }

    #[test]
    fn default_footprint_is_gigabytes() {
        let mut cfg: DlrmConfig = toml::from_str("").unwrap();
        cfg.populate = false;
        cfg.validate("workload").unwrap();
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        drop(build(&cfg, &mut os, pid, 1).unwrap());
        assert!(vma_bytes(&os) >= 2 << 30, "{}", vma_bytes(&os));
    }
}
