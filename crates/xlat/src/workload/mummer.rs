//! MUMmer-like genome alignment, BioBench's `mummer`, one of ME-HPT's (§VI
//! "Applications", Table I) workloads.
//!
//! MUMmer finds the maximal exact matches between a reference genome and query sequences by
//! looking every query suffix up in an index of the reference. This generator indexes the
//! reference with a suffix array (the layout of MUMmer 4 and of the sparseMEM/essaMEM family,
//! where MUMmer 3 used a suffix tree) and, for every position of every query, finds the longest
//! prefix of the query suffix that occurs in the reference by binary search over the suffix
//! array. Each probe loads `SA[mid]` and then compares the reference text at `SA[mid] + k`, eight
//! bytes at a time as memcmp does, so every probe lands on a random page of the text: the
//! scattered, translation-bound pattern that makes the program interesting for page tables.
//!
//! The search keeps the lengths of the matches with both search bounds and starts each comparison
//! at the smaller of the two (Manber & Myers' "mlr" acceleration), since every suffix between the
//! bounds shares that many bases with the query.
//!
//! The reference is synthetic (seeded), one ASCII byte per base as MUMmer stores the text, with
//! copies of earlier segments (k-mer counting's generator, [`super::kmer::synth_genome`]) so that
//! matches are not only the query's own origin. Queries are reads sampled from the reference with
//! point substitutions.

use super::emit::{Array, Emitter, RecId, SimHeap, Stop, ThreadedSource};
use super::kmer::{base_at, synth_genome};
use crate::error::{Error, Result};
use crate::os::{AddressSpaces, MapKind};
use crate::rng::{self, Rng};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MummerConfig {
    /// Bases of the reference genome (one byte each; the suffix array holds as many 4-byte
    /// positions).
    #[serde(default = "default_reference")]
    pub reference_bases: u64,
    /// Fraction of the reference made of copies of earlier segments.
    #[serde(default = "default_repeat")]
    pub repeat_fraction: f64,
    /// Bases of each query read.
    #[serde(default = "default_query_length")]
    pub query_length: u64,
    /// Probability that a query base differs from the reference base it was sampled from.
    #[serde(default = "default_mutation_rate")]
    pub mutation_rate: f64,
    /// Shortest match reported.
    #[serde(default = "default_min_match")]
    pub min_match: u64,
    /// Memory references to emit (queries are aligned until the budget is spent).
    #[serde(default = "default_refs")]
    pub references: u64,
    /// Map the text and the suffix array before the first reference (the program reads the
    /// genome and builds its index before aligning).
    #[serde(default = "default_populate")]
    pub populate: bool,
}

fn default_reference() -> u64 {
    32 << 20
}
fn default_repeat() -> f64 {
    0.1
}
fn default_query_length() -> u64 {
    1000
}
fn default_mutation_rate() -> f64 {
    0.01
}
fn default_min_match() -> u64 {
    20
}
fn default_refs() -> u64 {
    40_000_000
}
fn default_populate() -> bool {
    true
}

/// Largest reference accepted: positions (and the construction's ranks, which count the empty
/// suffix too) must fit 32 bits.
const MAX_REFERENCE_BASES: u64 = 1 << 31;
/// Bytes of one reported match: reference position, query position and length, 32 bits each.
const MATCH_BYTES: u64 = 12;
/// Matches the output buffer holds; when it is full it is written out and refilled from the
/// start (the write itself is a system call, not emitted).
const OUTPUT_MATCHES: u64 = 1 << 16;
/// Bytes compared per step, as a word-at-a-time memcmp does.
const WORD: usize = 8;

impl MummerConfig {
    /// Bytes of simulated memory: the text (a byte a base), the suffix array (4 bytes a base),
    /// the query and the output buffer.
    pub fn footprint(&self) -> u64 {
        let page = |b: u64| b.div_ceil(4096) * 4096;
        page(self.reference_bases)
            + page(4 * self.reference_bases)
            + page(self.query_length)
            + page(OUTPUT_MATCHES * MATCH_BYTES)
    }

    /// Host bytes: the text and the suffix array as simulated, and the construction's buffer
    /// (2 bytes a base; see [`suffix_array`]).
    pub fn host_bytes(&self) -> u64 {
        7 * self.reference_bases + (1 << 20)
    }

    /// The largest reference: 2^31 bases (positions are 32-bit).
    pub fn max_footprint(&self) -> u64 {
        self.with_bases(MAX_REFERENCE_BASES).footprint()
    }

    /// A reference as long as one query.
    pub fn min_footprint(&self) -> u64 {
        self.with_bases(self.query_length).footprint()
    }

    fn with_bases(&self, reference_bases: u64) -> MummerConfig {
        MummerConfig {
            reference_bases,
            ..self.clone()
        }
    }

    /// Set `reference_bases` to the most whose text and index fit in `bytes`; `None` if not
    /// even a query's length does.
    pub fn fit(&mut self, bytes: u64) -> Option<u64> {
        let bases = {
            let at = |bases| self.with_bases(bases).footprint();
            let hi = (bytes / 5 + 1).min(MAX_REFERENCE_BASES + 1);
            super::footprint::largest_fitting(self.query_length, hi, bytes, at)?
        };
        self.reference_bases = bases;
        Some(self.footprint())
    }

    pub fn validate(&self, path: &str) -> Result<()> {
        if !(2..=MAX_REFERENCE_BASES).contains(&self.reference_bases) {
            return Err(Error::config(
                format!("{path}.reference_bases"),
                format!(
                    "must be between 2 and {MAX_REFERENCE_BASES}, got {}",
                    self.reference_bases
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.repeat_fraction) {
            return Err(Error::config(
                format!("{path}.repeat_fraction"),
                format!("must be between 0 and 1, got {}", self.repeat_fraction),
            ));
        }
        if !(1..=self.reference_bases).contains(&self.query_length) {
            return Err(Error::config(
                format!("{path}.query_length"),
                format!(
                    "must be between 1 and reference_bases ({}), got {}",
                    self.reference_bases, self.query_length
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.mutation_rate) {
            return Err(Error::config(
                format!("{path}.mutation_rate"),
                format!("must be between 0 and 1, got {}", self.mutation_rate),
            ));
        }
        if !(1..=self.query_length).contains(&self.min_match) {
            return Err(Error::config(
                format!("{path}.min_match"),
                format!(
                    "must be between 1 and query_length ({}), got {}",
                    self.query_length, self.min_match
                ),
            ));
        }
        super::nonzero(format!("{path}.references"), self.references)
    }
}

/// The bases as MUMmer's text holds them.
const BASES: [u8; 4] = *b"ACGT";

/// A seeded synthetic reference of `bases` ASCII bases, with `repeat_fraction` of it copied
/// (with sparse point mutations) from earlier segments.
pub fn reference_text(bases: u64, repeat_fraction: f64, rng: &mut Rng) -> Vec<u8> {
    let packed = synth_genome(bases, repeat_fraction, rng);
    (0..bases)
        .map(|i| BASES[base_at(&packed, i) as usize])
        .collect()
}

/// Draws query reads: a uniformly placed stretch of the reference, each base substituted by
/// another with probability `mutation_rate` (sequencing errors and variants).
pub struct QuerySampler {
    rng: Rng,
    length: usize,
    mutation_rate: f64,
}

impl QuerySampler {
    pub fn new(rng: Rng, length: u64, mutation_rate: f64) -> QuerySampler {
        QuerySampler {
            rng,
            length: length as usize,
            mutation_rate,
        }
    }

    /// The next read from `text` (at least `length` bases long).
    pub fn next(&mut self, text: &[u8]) -> Vec<u8> {
        let start = self.rng.below((text.len() - self.length + 1) as u64) as usize;
        let mut read = text[start..start + self.length].to_vec();
        for b in &mut read {
            if self.rng.unit() < self.mutation_rate {
                let code = BASES.iter().position(|x| x == b).unwrap_or(0);
                *b = BASES[(code + 1 + self.rng.below(3) as usize) % 4];
            }
        }
        read
    }
}

/// 2-bit code of a base (in the text's sort order).
#[inline]
fn code(b: u8) -> u64 {
    match b {
        b'A' => 0,
        b'C' => 1,
        b'G' => 2,
        _ => 3,
    }
}

/// Bases of a suffix's bucket: its first 8 (16 bits, 65536 buckets).
const BUCKET_BASES: usize = 8;
/// Bases of the key a suffix is sorted by inside its bucket (32 bits).
const KEY_BASES: usize = 16;
/// Bases the bucket and the key distinguish; suffixes equal in all of them compare their text.
const SORTED_BASES: usize = BUCKET_BASES + KEY_BASES;

/// The suffix array of `text` (over ACGT): the start positions of its suffixes in
/// lexicographic order.
///
/// Each suffix's first 24 bases, 2-bit packed (padded with A past the end), are read from a
/// rolling window over the text: the first 8 are its bucket, the next 16 its key. One pass
/// counts the buckets, so each bucket's place in the array is known. The buckets are then
/// filled group by group, a group being consecutive buckets of at most `n / 4` suffixes: a
/// pass over the text puts each suffix of the group, as its key above its position, into a
/// buffer laid out like the group's part of the array, and each bucket is sorted there in
/// cache. A random genome's suffixes almost never share 24 bases, so what remains is the runs
/// of equal keys (mostly suffixes inside repeats and their sources): those are ordered by
/// comparing the text beyond, a suffix that ends first (a prefix of the other) sorting first.
///
/// The host holds the text, the array (4 bytes a base) and the buffer (2 bytes a base), 7 bytes
/// a base where sorting (key, position) items of the whole text would take 21: what lets the
/// 6.9 GB index be built in 16 GiB. Five passes over the text cost 1.4x the time of one sort of
/// all items at the default 32 Mbases. A bucket larger than a group (a text of long repeats) is
/// sorted in place by comparing suffixes.
pub fn suffix_array(text: &[u8]) -> Vec<u32> {
    let n = text.len();
    suffix_array_in_groups(text, (n / 4).max(1 << 16))
}

/// [`suffix_array`] with groups of at most `group` suffixes (a parameter so that the tests can
/// reach the in-place path with small texts).
fn suffix_array_in_groups(text: &[u8], group: usize) -> Vec<u32> {
    let n = text.len();
    let buckets = 1 << (2 * BUCKET_BASES);
    let mut count = vec![0usize; buckets];
    for (_, window) in windows(text) {
        count[bucket(window)] += 1;
    }
    let mut start = Vec::with_capacity(buckets + 1);
    start.push(0);
    for c in &count {
        start.push(start.last().copied().unwrap_or(0) + c);
    }
    let mut sa = vec![0u32; n];
    let mut items: Vec<u64> = Vec::new();
    let mut first = 0;
    while first < buckets {
        // The next group: consecutive buckets up to `group` suffixes (at least one bucket).
        let mut last = first + 1;
        while last < buckets && start[last + 1] - start[first] <= group {
            last += 1;
        }
        let (lo, hi) = (start[first], start[last]);
        if last == first + 1 && hi - lo > group {
            fill_bucket_in_place(text, first, &mut sa[lo..hi]);
        } else {
            items.clear();
            items.resize(hi - lo, 0);
            let mut next: Vec<usize> = start[first..last].iter().map(|s| s - lo).collect();
            for (i, window) in windows(text) {
                let b = bucket(window);
                if (first..last).contains(&b) {
                    items[next[b - first]] = (window & 0xffff_ffff) << 32 | i as u64;
                    next[b - first] += 1;
                }
            }
            for b in first..last {
                let (blo, bhi) = (start[b] - lo, start[b + 1] - lo);
                sort_bucket(text, &mut items[blo..bhi], &mut sa[start[b]..start[b + 1]]);
            }
        }
        first = last;
    }
    sa
}

/// Each position of `text` with the 24 bases from it, 2-bit packed (padded with A).
fn windows(text: &[u8]) -> impl Iterator<Item = (usize, u64)> + '_ {
    let mask = (1u64 << (2 * SORTED_BASES)) - 1;
    let base = move |i: usize| text.get(i).map_or(0, |&b| code(b));
    let mut window = (0..SORTED_BASES).fold(0, |w, j| (w << 2) | base(j));
    (0..text.len()).map(move |i| {
        let this = window;
        window = ((window << 2) | base(i + SORTED_BASES)) & mask;
        (i, this)
    })
}

/// The bucket of a 24-base window: its first 8 bases.
fn bucket(window: u64) -> usize {
    (window >> (2 * KEY_BASES)) as usize
}

/// Sort one bucket's `items` (key above position) and write their positions to `sa`, ordering
/// the runs of equal keys by the text after them.
fn sort_bucket(text: &[u8], items: &mut [u64], sa: &mut [u32]) {
    items.sort_unstable();
    for (slot, item) in sa.iter_mut().zip(items.iter()) {
        *slot = *item as u32;
    }
    let mut lo = 0;
    while lo < items.len() {
        let key = items[lo] >> 32;
        let hi = lo + items[lo..].iter().take_while(|&&v| v >> 32 == key).count();
        if hi - lo > 1 {
            sa[lo..hi].sort_unstable_by(|&a, &b| compare_suffixes(text, a, b, SORTED_BASES));
        }
        lo = hi;
    }
}

/// Fill `sa` with the positions of the suffixes in `bucket` and sort them by comparing text.
fn fill_bucket_in_place(text: &[u8], b: usize, sa: &mut [u32]) {
    let mut slots = sa.iter_mut();
    for (i, window) in windows(text) {
        if bucket(window) == b {
            *slots.next().expect("the bucket's count") = i as u32;
        }
    }
    sa.sort_unstable_by(|&a, &b| compare_suffixes(text, a, b, BUCKET_BASES));
}

/// Order of the suffixes at `a` and `b` that share their first `skip` bases (as padded
/// windows): by the text after them, a suffix that ends first sorting first.
fn compare_suffixes(text: &[u8], a: u32, b: u32, skip: usize) -> std::cmp::Ordering {
    let n = text.len();
    let (a, b) = (a as usize, b as usize);
    text[(a + skip).min(n)..]
        .cmp(&text[(b + skip).min(n)..])
        .then(b.cmp(&a))
}

/// One reported match: `query[query_pos..query_pos + len]` equals
/// `reference[ref_pos..ref_pos + len]`, the longest match of that query suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    pub query_pos: u32,
    pub ref_pos: u32,
    pub len: u32,
}

/// Where the program's arrays live in the simulated process.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The reference, one byte per base.
    pub text: Array,
    /// Suffix array: 4-byte reference positions.
    pub sa: Array,
    /// The current query read, one byte per base.
    pub query: Array,
    /// Reported matches, written out whenever full.
    pub out: Array,
}

impl Layout {
    pub fn alloc(cfg: &MummerConfig, os: &mut dyn AddressSpaces, pid: u16) -> Result<Layout> {
        let mut heap = SimHeap::new(pid, MapKind::Anon, cfg.populate);
        Ok(Layout {
            text: heap.array(os, cfg.reference_bases, 1)?,
            sa: heap.array(os, cfg.reference_bases, 4)?,
            query: heap.array(os, cfg.query_length, 1)?,
            out: heap.array(os, OUTPUT_MATCHES, MATCH_BYTES)?,
        })
    }
}

/// The aligning program: the reference and its suffix array (the logical contents of the
/// simulated text and SA arrays) and the state of its output buffer.
pub struct Aligner {
    text: Vec<u8>,
    sa: Vec<u32>,
    layout: Layout,
    min_match: usize,
    /// Matches reported so far (the output buffer's fill position, modulo its size).
    reported: u64,
}

impl Aligner {
    pub fn new(text: Vec<u8>, sa: Vec<u32>, layout: Layout, min_match: u64) -> Aligner {
        Aligner {
            text,
            sa,
            layout,
            min_match: min_match as usize,
            reported: 0,
        }
    }

    /// Read `query` into the query buffer, then report the longest match of every query suffix
    /// that is at least `min_match` long. Returns the matches reported.
    pub fn align(
        &mut self,
        e: &mut Emitter,
        query: &[u8],
    ) -> std::result::Result<Vec<Match>, Stop> {
        for i in (0..query.len()).step_by(WORD) {
            e.instr(2);
            e.store(
                self.layout.query.at(i as u64),
                WORD.min(query.len() - i) as u8,
            )?;
        }
        let mut found = Vec::new();
        for p in 0..query.len() {
            e.instr(3);
            let (len, ref_pos) = self.longest_match(e, query, p)?;
            if len >= self.min_match {
                let m = Match {
                    query_pos: p as u32,
                    ref_pos,
                    len: len as u32,
                };
                e.instr(3);
                let slot = self.reported % OUTPUT_MATCHES;
                e.store(self.layout.out.at(slot), MATCH_BYTES as u8)?;
                self.reported += 1;
                found.push(m);
            }
        }
        Ok(found)
    }

    /// The longest prefix of `query[p..]` occurring in the reference: `(length, position)`.
    ///
    /// Binary search for the query suffix's place among the sorted suffixes; the longest match
    /// is with one of its two neighbours there. Invariant: `SA[..lo]` sort before the query,
    /// `SA[hi..]` not, `lcp_lo`/`lcp_hi` are the query's matches with `SA[lo-1]` and `SA[hi]`.
    fn longest_match(
        &self,
        e: &mut Emitter,
        query: &[u8],
        p: usize,
    ) -> std::result::Result<(usize, u32), Stop> {
        let q = &query[p..];
        let (mut lo, mut hi) = (0, self.sa.len());
        let (mut lcp_lo, mut lcp_hi) = (0, 0);
        while lo < hi {
            let mid = (lo + hi) / 2;
            e.instr(5);
            let probe = e.load(self.layout.sa.at(mid as u64), 4)?;
            let skip = lcp_lo.min(lcp_hi);
            let (lcp, before) = self.compare(e, q, p, self.sa[mid] as usize, skip, probe)?;
            e.instr(3);
            if before {
                lo = mid + 1;
                lcp_lo = lcp;
            } else {
                hi = mid;
                lcp_hi = lcp;
            }
        }
        Ok(if lo < self.sa.len() && lcp_hi >= lcp_lo {
            (lcp_hi, self.sa[lo])
        } else if lo > 0 {
            (lcp_lo, self.sa[lo - 1])
        } else {
            (0, 0)
        })
    }

    /// memcmp of the query suffix `q` (at `p` in the query buffer) with the reference suffix at
    /// `s`, from offset `skip` (known equal), a word at a time. The text loads depend on the
    /// suffix-array load `probe` that gave `s`. Returns the length of the common prefix and
    /// whether the reference suffix sorts before the query suffix.
    fn compare(
        &self,
        e: &mut Emitter,
        q: &[u8],
        p: usize,
        s: usize,
        skip: usize,
        probe: RecId,
    ) -> std::result::Result<(usize, bool), Stop> {
        let suffix = &self.text[s..];
        let mut k = skip;
        loop {
            let step = WORD.min(q.len() - k).min(suffix.len() - k);
            if step == 0 {
                // The shorter one is a prefix of the other and sorts first.
                return Ok((k, k == suffix.len() && k < q.len()));
            }
            e.instr(4);
            e.load_dep(self.layout.text.at((s + k) as u64), step as u8, probe)?;
            e.load(self.layout.query.at((p + k) as u64), step as u8)?;
            if let Some(j) = (0..step).find(|&j| suffix[k + j] != q[k + j]) {
                return Ok((k + j, suffix[k + j] < q[k + j]));
            }
            k += step;
        }
    }
}

/// The program's start-up, on the producer thread: generate the reference, index it, and seed
/// the query reads.
fn prepare(cfg: &MummerConfig, layout: Layout, seed: u64) -> (Aligner, QuerySampler) {
    let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
    let text = reference_text(cfg.reference_bases, cfg.repeat_fraction, &mut rng);
    let sa = suffix_array(&text);
    let queries = QuerySampler::new(rng, cfg.query_length, cfg.mutation_rate);
    (Aligner::new(text, sa, layout, cfg.min_match), queries)
}

/// Builds the aligner in process `pid` and returns its record stream.
pub fn build(
    cfg: &MummerConfig,
    os: &mut dyn AddressSpaces,
    pid: u16,
    seed: u64,
) -> Result<ThreadedSource> {
    let layout = Layout::alloc(cfg, os, pid)?;
    let cfg = cfg.clone();
    Ok(ThreadedSource::spawn(
        pid,
        cfg.references,
        move |e: &mut Emitter| -> std::result::Result<(), Stop> {
            let (mut aligner, mut queries) = prepare(&cfg, layout, seed);
            loop {
                let query = queries.next(&aligner.text);
                aligner.align(e, &query)?;
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Op, Record};
    use crate::workload::testutil::{self, drain, small_os, stream_hash, vma_bytes};
    use proptest::prelude::{prop_assert_eq, prop_oneof, proptest, Just};

    fn tiny() -> MummerConfig {
        MummerConfig {
            reference_bases: 200,
            repeat_fraction: 0.0,
            query_length: 40,
            mutation_rate: 0.05,
            min_match: 8,
            references: 1_000_000,
            populate: true,
        }
    }

    /// The layout `build` allocates, in a fresh OS.
    fn layout(cfg: &MummerConfig) -> Layout {
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        Layout::alloc(cfg, &mut os, pid).unwrap()
    }

    fn run(cfg: &MummerConfig, seed: u64) -> Vec<Record> {
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        drain(&mut build(cfg, &mut os, pid, seed).unwrap(), 1000)
    }

    /// The reference and query sampler the generator starts from.
    fn inputs(cfg: &MummerConfig, seed: u64) -> (Vec<u8>, QuerySampler) {
        let mut rng = Rng::new(seed, rng::stream::WORKLOAD);
        let text = reference_text(cfg.reference_bases, cfg.repeat_fraction, &mut rng);
        (
            text,
            QuerySampler::new(rng, cfg.query_length, cfg.mutation_rate),
        )
    }

    fn naive_suffix_array(text: &[u8]) -> Vec<u32> {
        let mut sa: Vec<u32> = (0..text.len() as u32).collect();
        sa.sort_by(|&a, &b| text[a as usize..].cmp(&text[b as usize..]));
        sa
    }

    fn lcp(a: &[u8], b: &[u8]) -> usize {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }

    #[test]
    fn suffix_array_is_the_sorted_suffixes() {
        let mut rng = Rng::new(1, 7);
        let random = reference_text(200, 0.0, &mut rng);
        let repeats = reference_text(30_000, 0.6, &mut rng);
        let mut doubled = random[..100].to_vec();
        doubled.extend_from_slice(&random[..100]);
        let texts: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"G".to_vec(),
            vec![b'A'; 200],
            b"ACG".repeat(70),
            doubled,
            random,
            repeats,
        ];
        for t in &texts {
            let naive = naive_suffix_array(t);
            assert_eq!(suffix_array(t), naive, "{}", t.len());
            // Groups of one bucket, and buckets too large for a group, sorted in place.
            assert_eq!(suffix_array_in_groups(t, 1), naive, "{}", t.len());
            assert_eq!(suffix_array_in_groups(t, 50), naive, "{}", t.len());
        }
    }

    proptest! {
        #[test]
        fn suffix_array_of_repetitive_text(t in proptest::collection::vec(
            prop_oneof![Just(b'A'), Just(b'C'), Just(b'T')], 0..400)) {
            let naive = naive_suffix_array(&t);
            prop_assert_eq!(suffix_array(&t), naive.clone());
            prop_assert_eq!(suffix_array_in_groups(&t, 7), naive);
        }
    }

    #[test]
    fn stored_matches_are_the_longest_matches_of_a_naive_scan() {
        let cfg = tiny();
        let (text, mut sampler) = inputs(&cfg, 3);
        let queries: Vec<Vec<u8>> = (0..5).map(|_| sampler.next(&text)).collect();
        let layout = layout(&cfg);
        let qs = queries.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let recs = testutil::run(move |e| {
            let (mut aligner, _) = prepare(&cfg, layout, 3);
            for q in &qs {
                tx.send(aligner.align(e, q)?).unwrap();
            }
            Ok(())
        });
        let found: Vec<Vec<Match>> = rx.iter().collect();
        let mut total = 0;
        for (q, got) in queries.iter().zip(&found) {
            let mut want = Vec::new();
            for p in 0..q.len() {
                let best = (0..text.len())
                    .map(|s| lcp(&q[p..], &text[s..]))
                    .max()
                    .unwrap();
                if best >= 8 {
                    want.push((p as u32, best as u32));
                }
            }
            let lens: Vec<(u32, u32)> = got.iter().map(|m| (m.query_pos, m.len)).collect();
            assert_eq!(lens, want);
            for m in got {
                let (p, s) = (m.query_pos as usize, m.ref_pos as usize);
                assert_eq!(lcp(&q[p..], &text[s..]), m.len as usize, "{m:?}");
            }
            total += got.len();
        }
        assert!(total > 20, "the reads match their origin: {total}");
        let out = layout.out.base.0..layout.out.base.0 + layout.out.bytes();
        let stores = recs
            .iter()
            .filter(|r| r.op == Op::Store && out.contains(&r.vaddr.0))
            .count();
        assert_eq!(stores, total);
    }

    /// The accesses of a plain binary search for each query suffix over the true suffix array:
    /// `(address, op, size, distance to the SA load a text load depends on)`.
    fn reference_accesses(cfg: &MummerConfig, seed: u64, reads: usize) -> Vec<(u64, Op, u8, u32)> {
        let (text, mut sampler) = inputs(cfg, seed);
        let sa = naive_suffix_array(&text);
        let l = layout(cfg);
        let n = text.len();
        let mut want = Vec::new();
        let mut reported = 0;
        for _ in 0..reads {
            let q = sampler.next(&text);
            for i in (0..q.len()).step_by(8) {
                want.push((
                    l.query.at(i as u64).0,
                    Op::Store,
                    8.min(q.len() - i) as u8,
                    0,
                ));
            }
            for p in 0..q.len() {
                let q = &q[p..];
                // lo: suffixes known smaller; hi: first known not smaller.
                let (mut lo, mut hi, mut m_lo, mut m_hi) = (0, n, 0, 0);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    let s = sa[mid] as usize;
                    let sa_load = want.len();
                    want.push((l.sa.at(mid as u64).0, Op::Load, 4, 0));
                    let skip = m_lo.min(m_hi);
                    let m = lcp(q, &text[s..]);
                    let ends = m == q.len().min(n - s);
                    let mut k = skip;
                    while k < m || (k == m && !ends) {
                        let w = 8.min(q.len() - k).min(n - s - k);
                        let dep = (want.len() - sa_load) as u32;
                        want.push((l.text.at((s + k) as u64).0, Op::Load, w as u8, dep));
                        want.push((l.query.at((p + k) as u64).0, Op::Load, w as u8, 0));
                        k += w;
                    }
                    if text[s..] < *q {
                        (lo, m_lo) = (mid + 1, m);
                    } else {
                        (hi, m_hi) = (mid, m);
                    }
                }
                if m_lo.max(m_hi) >= cfg.min_match as usize {
                    let slot = reported % OUTPUT_MATCHES;
                    want.push((l.out.at(slot).0, Op::Store, 12, 0));
                    reported += 1;
                }
            }
        }
        want
    }

    #[test]
    fn accesses_follow_a_reference_binary_search() {
        let cfg = MummerConfig {
            repeat_fraction: 0.5,
            reference_bases: 3000,
            query_length: 100,
            min_match: 12,
            ..tiny()
        };
        let want = reference_accesses(&cfg, 5, 4);
        let got: Vec<_> = run(
            &MummerConfig {
                references: want.len() as u64,
                ..cfg
            },
            5,
        )
        .iter()
        .map(|r| (r.vaddr.0, r.op, r.size, r.dep))
        .collect();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
        // Some comparisons ran over three or more words (a text load five records after its
        // SA load).
        assert!(want.iter().any(|a| a.1 == Op::Load && a.3 >= 5));
    }

    #[test]
    fn deterministic_per_seed() {
        let cfg = MummerConfig {
            references: 200_000,
            ..tiny()
        };
        let a = stream_hash(&run(&cfg, 4));
        assert_eq!(a, stream_hash(&run(&cfg, 4)));
        assert_ne!(a, stream_hash(&run(&cfg, 5)));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let check = |f: fn(&mut MummerConfig), key: &str| {
            let mut c = tiny();
            f(&mut c);
            let err = c.validate("workload").unwrap_err().to_string();
            assert!(err.contains(&format!("`workload.{key}`")), "{err}");
        };
        check(|c| c.reference_bases = 1, "reference_bases");
        check(|c| c.reference_bases = 1 << 32, "reference_bases");
        check(|c| c.repeat_fraction = -0.1, "repeat_fraction");
        check(|c| c.query_length = 0, "query_length");
        check(|c| c.query_length = 201, "query_length");
        check(|c| c.mutation_rate = 1.5, "mutation_rate");
        check(|c| c.mutation_rate = f64::NAN, "mutation_rate");
        check(|c| c.min_match = 0, "min_match");
        check(|c| c.min_match = 41, "min_match");
        check(|c| c.references = 0, "references");
        assert!(tiny().validate("workload").is_ok());
        let err = toml::from_str::<MummerConfig>("query_len = 5").unwrap_err();
        assert!(err.to_string().contains("query_len"), "{err}");
    }

    #[test]
    fn default_footprint_is_text_plus_suffix_array() {
        let mut cfg: MummerConfig = toml::from_str("").unwrap();
        cfg.validate("workload").unwrap();
        cfg.populate = false;
        let mut os = small_os();
        let pid = os.spawn().unwrap();
        drop(build(&cfg, &mut os, pid, 1).unwrap());
        assert!(
            vma_bytes(&os) >= 5 * cfg.reference_bases,
            "{}",
            vma_bytes(&os)
        );
        assert!(vma_bytes(&os) >= 160 << 20, "{}", vma_bytes(&os));
    }
}
