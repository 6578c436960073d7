//! Trace summaries (`xlat trace inspect`): counts, footprint and the page reuse-distance
//! histogram, computed in one streaming pass.
//!
//! The reuse distance of an access is the number of *distinct* 4 KiB pages touched since the
//! previous access to the same page (Mattson et al.'s stack distance at page granularity): an
//! access hits in a fully associative LRU TLB of `E` entries exactly when its distance is below
//! `E`, so the histogram reads directly as "how large a TLB this trace needs". It is computed
//! exactly with a Fenwick tree over access times in which only each page's latest access is
//! marked, so the distance is a range count. Times are renumbered when the tree fills, which
//! keeps memory proportional to the number of unique pages, not to the trace length.

use crate::error::Result;
use crate::trace::{Op, RecordSource};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

const PAGE_4K_SHIFT: u32 = 12;
const PAGE_2M_SHIFT: u32 = 21;
/// Smallest Fenwick tree (in access slots) a tracker starts with.
const MIN_SLOTS: usize = 1 << 12;

/// A page: process and 4 KiB virtual page number.
type PageKey = (u16, u64);

/// A binary indexed tree of 0/1 marks answering prefix counts in `O(log n)`.
struct Fenwick {
    tree: Vec<u32>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick {
            tree: vec![0; n + 1],
        }
    }

    fn len(&self) -> usize {
        self.tree.len() - 1
    }

    /// Adds `delta` (+1 or -1) at slot `i`.
    fn add(&mut self, i: usize, delta: i32) {
        let mut k = i + 1;
        while k < self.tree.len() {
            self.tree[k] = self.tree[k].wrapping_add_signed(delta);
            k += k & k.wrapping_neg();
        }
    }

    /// Marks in slots `[0, i)`.
    fn prefix(&self, i: usize) -> u64 {
        let mut k = i;
        let mut s = 0u64;
        while k > 0 {
            s += self.tree[k] as u64;
            k -= k & k.wrapping_neg();
        }
        s
    }
}

/// Exact page reuse distances of a stream of page accesses.
pub struct ReuseTracker {
    /// Each page's latest access slot.
    last: FxHashMap<PageKey, usize>,
    /// Slot `s` is marked iff it is some page's latest access.
    marks: Fenwick,
    /// The next access's slot.
    next: usize,
    min_slots: usize,
}

impl Default for ReuseTracker {
    fn default() -> Self {
        ReuseTracker::with_min_slots(MIN_SLOTS)
    }
}

impl ReuseTracker {
    /// A tracker whose tree starts with (and never shrinks below) `min_slots` slots; small
    /// values make tests exercise renumbering.
    pub fn with_min_slots(min_slots: usize) -> Self {
        let min_slots = min_slots.max(2);
        ReuseTracker {
            last: FxHashMap::default(),
            marks: Fenwick::new(min_slots),
            next: 0,
            min_slots,
        }
    }

    /// Renumbers the live slots (one per page) to `0..pages` in order, in a tree with room to
    /// spare, so slot numbers stay bounded by a multiple of the unique page count.
    fn compact(&mut self) {
        let mut live: Vec<(usize, PageKey)> = self.last.iter().map(|(&p, &s)| (s, p)).collect();
        live.sort_unstable();
        let slots = (2 * live.len()).max(self.min_slots);
        self.marks = Fenwick::new(slots);
        for (new, (_, page)) in live.iter().enumerate() {
            self.last.insert(*page, new);
            self.marks.add(new, 1);
        }
        self.next = live.len();
    }

    /// Records an access to `page`; returns its reuse distance, `None` on the first touch.
    pub fn touch(&mut self, page: PageKey) -> Option<u64> {
        if self.next == self.marks.len() {
            self.compact();
        }
        let now = self.next;
        self.next += 1;
        let distance = self.last.insert(page, now).map(|prev| {
            let between = self.marks.prefix(now) - self.marks.prefix(prev + 1);
            self.marks.add(prev, -1);
            between
        });
        self.marks.add(now, 1);
        distance
    }

    /// Distinct pages seen.
    pub fn pages(&self) -> u64 {
        self.last.len() as u64
    }
}

/// Histogram bucket of a log2 reuse-distance histogram: distances in `[min, max]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReuseBucket {
    pub min: u64,
    pub max: u64,
    pub count: u64,
}

/// The bucket index of `distance`: 0 holds distance 0, bucket `k >= 1` holds
/// `[2^(k-1), 2^k - 1]`.
pub fn bucket_of(distance: u64) -> usize {
    (u64::BITS - distance.leading_zeros()) as usize
}

/// Summary of a trace, as `xlat trace inspect` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Detected format (`xtr`, `champsim`, `lackey`).
    pub format: String,
    pub records: u64,
    pub loads: u64,
    pub stores: u64,
    pub ifetches: u64,
    /// Instructions as the simulator counts them: one per record that starts an instruction
    /// (every record but the further memory operands of one, [`Record::joins_previous`]
    /// right after a record of the same stream) plus every `instr_delta`.
    ///
    /// [`Record::joins_previous`]: crate::trace::Record::joins_previous
    pub instructions: u64,
    /// Memory operands: the loads and stores (several may belong to one instruction).
    pub memory_operands: u64,
    /// Instructions with more than one memory operand.
    pub multi_operand_instructions: u64,
    /// Records with a non-zero `dep` (load-to-load dependences).
    pub dependent: u64,
    /// Unique 4 KiB pages × 4 KiB.
    pub footprint_bytes: u64,
    pub unique_pages_4k: u64,
    pub unique_pages_2m: u64,
    /// Lowest and highest virtual address accessed (`None` for an empty trace).
    pub min_address: Option<u64>,
    pub max_address: Option<u64>,
    /// Accesses that touch a 4 KiB page for the first time (infinite reuse distance).
    pub reuse_cold: u64,
    /// Log2 histogram of 4 KiB page reuse distances (distinct pages between two touches of
    /// the same page), up to the highest non-empty bucket.
    pub reuse_histogram: Vec<ReuseBucket>,
    /// The record at which the region of interest begins: the records before it are a
    /// workload's set-up, recorded with it, which a run fast-forwards through by default. 0:
    /// the whole trace is region of interest.
    #[serde(default)]
    pub roi_start: u64,
    /// Set-up records of the workload that `xlat trace record` left out of the trace (it
    /// records the region of interest), where the trace's metadata says; `None` otherwise.
    #[serde(default)]
    pub setup_skipped: Option<u64>,
}

/// Accumulates a [`TraceSummary`] record by record.
pub struct Summarizer {
    s: TraceSummary,
    huge_pages: FxHashSet<PageKey>,
    reuse: ReuseTracker,
    buckets: Vec<u64>,
    /// The stream (`core`) of the previous record and whether its instruction has been
    /// counted among the multi-operand ones.
    previous: Option<(u8, bool)>,
}

impl Summarizer {
    pub fn new(format: &str, reuse: ReuseTracker) -> Self {
        Summarizer {
            s: TraceSummary {
                format: format.to_string(),
                records: 0,
                loads: 0,
                stores: 0,
                ifetches: 0,
                instructions: 0,
                memory_operands: 0,
                multi_operand_instructions: 0,
                dependent: 0,
                footprint_bytes: 0,
                unique_pages_4k: 0,
                unique_pages_2m: 0,
                min_address: None,
                max_address: None,
                reuse_cold: 0,
                reuse_histogram: Vec::new(),
                roi_start: 0,
                setup_skipped: None,
            },
            huge_pages: FxHashSet::default(),
            reuse,
            buckets: Vec::new(),
            previous: None,
        }
    }

    pub fn add(&mut self, r: &crate::trace::Record) {
        let s = &mut self.s;
        s.records += 1;
        match r.op {
            Op::Load => s.loads += 1,
            Op::Store => s.stores += 1,
            Op::Ifetch => s.ifetches += 1,
        }
        s.memory_operands += u64::from(r.op != Op::Ifetch);
        let joins = match self.previous {
            Some((core, counted)) if r.joins_previous() && core == r.core => {
                s.multi_operand_instructions += u64::from(!counted);
                self.previous = Some((core, true));
                true
            }
            _ => {
                self.previous = Some((r.core, false));
                false
            }
        };
        s.instructions += u64::from(!joins) + u64::from(r.instr_delta);
        s.dependent += u64::from(r.dep != 0);
        let a = r.vaddr.0;
        s.min_address = Some(s.min_address.map_or(a, |m| m.min(a)));
        s.max_address = Some(s.max_address.map_or(a, |m| m.max(a)));
        self.huge_pages.insert((r.pid, a >> PAGE_2M_SHIFT));
        match self.reuse.touch((r.pid, a >> PAGE_4K_SHIFT)) {
            None => s.reuse_cold += 1,
            Some(d) => {
                let b = bucket_of(d);
                if self.buckets.len() <= b {
                    self.buckets.resize(b + 1, 0);
                }
                self.buckets[b] += 1;
            }
        }
    }

    pub fn finish(mut self) -> TraceSummary {
        self.s.unique_pages_4k = self.reuse.pages();
        self.s.unique_pages_2m = self.huge_pages.len() as u64;
        self.s.footprint_bytes = self.s.unique_pages_4k << PAGE_4K_SHIFT;
        self.s.reuse_histogram = self
            .buckets
            .iter()
            .enumerate()
            .map(|(k, &count)| ReuseBucket {
                min: if k == 0 { 0 } else { 1 << (k - 1) },
                max: if k == 0 { 0 } else { u64::MAX >> (64 - k) },
                count,
            })
            .collect();
        self.s
    }
}

/// Summarises every record of `source`.
pub fn summarize(format: &str, source: &mut dyn RecordSource) -> Result<TraceSummary> {
    let mut sum = Summarizer::new(format, ReuseTracker::default());
    let mut buf = Vec::with_capacity(4096);
    loop {
        source.fill(&mut buf)?;
        if buf.is_empty() {
            let mut summary = sum.finish();
            if let crate::trace::Roi::At(start) = source.roi() {
                summary.roi_start = start;
            }
            return Ok(summary);
        }
        for r in &buf {
            sum.add(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::VirtAddr;
    use crate::trace::Record;
    use proptest::prelude::*;

    fn rec(op: Op, vaddr: u64, instr_delta: u32, dep: u32) -> Record {
        Record {
            vaddr: VirtAddr(vaddr),
            op,
            size: 8,
            core: 0,
            pid: 0,
            instr_delta,
            dep,
            flags: 0,
        }
    }

    /// Reuse distances by definition: distinct pages strictly between two touches.
    fn brute_force(pages: &[PageKey]) -> Vec<Option<u64>> {
        (0..pages.len())
            .map(|t| {
                let prev = (0..t).rev().find(|&s| pages[s] == pages[t])?;
                let between: FxHashSet<PageKey> = pages[prev + 1..t].iter().copied().collect();
                Some(between.len() as u64)
            })
            .collect()
    }

    #[test]
    fn buckets_are_log2() {
        let b: Vec<usize> = [0, 1, 2, 3, 4, 7, 8, 1023, 1024].map(bucket_of).to_vec();
        assert_eq!(b, [0, 1, 2, 2, 3, 3, 4, 10, 11]);
        assert_eq!(bucket_of(u64::MAX), 64);
    }

    #[test]
    fn tiny_trace_exact_summary() {
        const A: u64 = 0x10_0000;
        const B: u64 = 0x10_1008; // next 4 KiB page, same 2 MiB page
        const C: u64 = 0x40_0010; // another 2 MiB page
        let trace = [
            rec(Op::Load, A, 3, 0),        // cold
            rec(Op::Store, B, 0, 0),       // cold
            rec(Op::Load, A + 8, 1, 2),    // {B}: 1
            rec(Op::Load, A + 16, 0, 1),   // {}: 0
            rec(Op::Ifetch, C, 0, 0),      // cold
            rec(Op::Store, B, 2, 0),       // {A, C}: 2
            rec(Op::Load, A, 0, 0),        // {C, B}: 2
            rec(Op::Load, C + 4096, 0, 0), // cold
            rec(Op::Load, C, 0, 0),        // {C+4K, A, B}: 3
        ];
        let mut s = Summarizer::new("xtr", ReuseTracker::default());
        for r in &trace {
            s.add(r);
        }
        let got = s.finish();
        let bucket = |min, max, count| ReuseBucket { min, max, count };
        assert_eq!(
            got,
            TraceSummary {
                format: "xtr".into(),
                records: 9,
                loads: 6,
                stores: 2,
                ifetches: 1,
                instructions: 9 + 6,
                memory_operands: 8,
                multi_operand_instructions: 0,
                dependent: 2,
                footprint_bytes: 4 * 4096,
                unique_pages_4k: 4,
                unique_pages_2m: 2,
                min_address: Some(A),
                max_address: Some(C + 4096),
                reuse_cold: 4,
                reuse_histogram: vec![bucket(0, 0, 1), bucket(1, 1, 1), bucket(2, 3, 3)],
                roi_start: 0,
                setup_skipped: None,
            }
        );
    }

    /// A further memory operand is no instruction of its own, unless non-memory instructions
    /// or another stream's record come between it and the instruction it would join.
    #[test]
    fn further_operands_are_not_instructions() {
        let join = |r: Record| Record {
            flags: Record::SAME_INSTRUCTION,
            ..r
        };
        let trace = [
            rec(Op::Load, 0x1000, 2, 0),
            join(rec(Op::Load, 0x2000, 0, 0)),
            join(rec(Op::Store, 0x3000, 0, 0)),
            rec(Op::Load, 0x4000, 0, 0),
            join(rec(Op::Store, 0x4000, 0, 0)),
            // Non-memory instructions before it: an instruction of its own.
            join(rec(Op::Store, 0x5000, 1, 0)),
            // After another stream's record: likewise.
            Record {
                core: 1,
                ..rec(Op::Load, 0x6000, 0, 0)
            },
            join(rec(Op::Load, 0x7000, 0, 0)),
        ];
        let mut s = Summarizer::new("xtr", ReuseTracker::default());
        for r in &trace {
            s.add(r);
        }
        let got = s.finish();
        assert_eq!(got.records, 8);
        assert_eq!(got.memory_operands, 8);
        assert_eq!(got.instructions, 5 + 3);
        assert_eq!(got.multi_operand_instructions, 2);
    }

    #[test]
    fn pages_of_different_processes_are_distinct() {
        let mut s = Summarizer::new("xtr", ReuseTracker::default());
        let mut r = rec(Op::Load, 0x5000, 0, 0);
        s.add(&r);
        r.pid = 1;
        s.add(&r);
        r.pid = 0;
        s.add(&r);
        let got = s.finish();
        assert_eq!((got.unique_pages_4k, got.unique_pages_2m), (2, 2));
        assert_eq!(got.reuse_cold, 2);
        assert_eq!(
            got.reuse_histogram,
            vec![
                ReuseBucket {
                    min: 0,
                    max: 0,
                    count: 0
                },
                ReuseBucket {
                    min: 1,
                    max: 1,
                    count: 1
                }
            ]
        );
    }

    #[test]
    fn empty_trace() {
        let got = Summarizer::new("lackey", ReuseTracker::default()).finish();
        assert_eq!(
            (got.records, got.min_address, got.reuse_histogram.len()),
            (0, None, 0)
        );
    }

    proptest! {
        /// The Fenwick tracker agrees with the definition on every access, including across
        /// renumbering (tiny trees force it often), and its tree stays bounded by the pages.
        #[test]
        fn tracker_matches_brute_force(
            pages in proptest::collection::vec((0u16..2, 0u64..40), 0..400),
            min_slots in 1usize..64,
        ) {
            let mut t = ReuseTracker::with_min_slots(min_slots);
            let got: Vec<Option<u64>> = pages.iter().map(|&p| t.touch(p)).collect();
            prop_assert_eq!(got, brute_force(&pages));
            prop_assert!(t.marks.len() <= (2 * t.pages() as usize).max(min_slots.max(2)));
        }
    }
}
