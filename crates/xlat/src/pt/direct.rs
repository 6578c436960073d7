//! Direct segments with escape filters (Basu et al., ISCA'13; Gandhi et al. §II-B, §V).
//!
//! A direct segment maps `BASE <= a < LIMIT` to `a + OFFSET` with three registers. A few pages
//! inside it may have to be mapped elsewhere (a physical page with a hard fault, a guard
//! page): they *escape* the segment through a small Bloom filter checked beside the segment
//! registers, and translate through paging instead. The filter may say "escaped" of a page
//! that is not (a false positive): that page then translates through paging too, so the OS
//! maps it at its segment address as well.

use crate::error::{Error, Result};
use crate::rng::Rng;
use rustc_hash::FxHashSet;
use serde::Serialize;

/// Bits of the largest escape filter (§IX-C uses 256).
pub const MAX_FILTER_BITS: u32 = 1 << 16;

/// Most H3 hashes an escape filter may have. Every check of a segment address computes them
/// all, so they are work per access; with 64, even a 256-bit filter holding one page says
/// "escaped" of another with probability (1 - e^(-64/256))^64, below 1e-41.
pub const MAX_FILTER_HASHES: u32 = 64;

/// Most bad pages a segment may have: as many as the largest filter has bits. With more,
/// the filter's bits are nearly all set (each page sets one per hash), so nearly every
/// address looks escaped; and each bad page is drawn at boot and remembered in host memory.
pub const MAX_BAD_PAGES: u32 = MAX_FILTER_BITS;

/// Check the escape filter and bad pages of a segment's config: `(key, value)` of its
/// filter bits, filter hashes and bad pages.
pub fn check_escapes(bits: (&str, u32), hashes: (&str, u32), bad_pages: (&str, u32)) -> Result<()> {
    if !bits.1.is_power_of_two() || bits.1 > MAX_FILTER_BITS {
        return Err(Error::config(
            bits.0,
            format!(
                "must be a power of two up to {MAX_FILTER_BITS}, got {}",
                bits.1
            ),
        ));
    }
    let at_most = |(key, value): (&str, u32), max: u32, why: &str| {
        if value > max {
            return Err(Error::config(
                key,
                format!("must be at most {max} ({why}), got {value}"),
            ));
        }
        Ok(())
    };
    at_most(hashes, MAX_FILTER_HASHES, "each check computes every hash")?;
    at_most(
        bad_pages,
        MAX_BAD_PAGES,
        "more would fill any escape filter",
    )
}

/// A direct segment (Basu et al., ISCA'13; Gandhi et al. §II-B): the addresses
/// `BASE <= a < LIMIT` translate to `a - BASE + to`, by one addition and no page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub base: u64,
    pub limit: u64,
    /// Where `base` lands: `OFFSET = to - base`.
    pub to: u64,
}

impl Segment {
    /// The segment mapping `[base, base + bytes)` to `[to, to + bytes)`.
    pub fn new(base: u64, bytes: u64, to: u64) -> Segment {
        Segment {
            base,
            limit: base + bytes,
            to,
        }
    }

    /// The base-bound check.
    #[inline]
    pub fn contains(&self, a: u64) -> bool {
        self.base <= a && a < self.limit
    }

    /// `a + OFFSET` (for `a` inside the segment).
    #[inline]
    pub fn apply(&self, a: u64) -> u64 {
        a - self.base + self.to
    }

    pub fn bytes(&self) -> u64 {
        self.limit - self.base
    }
}

/// An H3-hashed Bloom filter of page numbers (Gandhi et al. §IX-C: 256 bits, 4 H3 hashes).
/// H3 (Carter and Wegman) hashes a key by XOR-ing one random row per set key bit: one level
/// of XOR gates in hardware.
#[derive(Clone, Debug)]
pub struct EscapeFilter {
    bits: Vec<u64>,
    /// `rows[h][i]`: what bit `i` of a page number contributes to hash `h`.
    rows: Vec<[u16; 52]>,
    mask: u16,
    entries: u32,
}

impl EscapeFilter {
    /// A filter of `bits` bits (a power of two, at most 65536) with `hashes` H3 hashes whose
    /// rows come from `rng`.
    pub fn new(bits: u32, hashes: u32, rng: &mut Rng) -> EscapeFilter {
        debug_assert!(bits.is_power_of_two() && bits <= MAX_FILTER_BITS);
        let mask = (bits - 1) as u16;
        let rows = (0..hashes)
            .map(|_| std::array::from_fn(|_| rng.next_u64() as u16 & mask))
            .collect();
        EscapeFilter {
            bits: vec![0; (bits as usize).div_ceil(64)],
            rows,
            mask,
            entries: 0,
        }
    }

    #[inline]
    fn hash(row: &[u16; 52], page: u64) -> u16 {
        let mut h = 0;
        let mut x = page & ((1 << 52) - 1);
        while x != 0 {
            h ^= row[x.trailing_zeros() as usize];
            x &= x - 1;
        }
        h
    }

    pub fn insert(&mut self, page: u64) {
        for row in &self.rows {
            let b = (Self::hash(row, page) & self.mask) as usize;
            self.bits[b / 64] |= 1 << (b % 64);
        }
        self.entries += 1;
    }

    /// Whether `page` may have been inserted (no false negatives).
    #[inline]
    pub fn may_contain(&self, page: u64) -> bool {
        self.entries > 0
            && self.rows.iter().all(|row| {
                let b = (Self::hash(row, page) & self.mask) as usize;
                self.bits[b / 64] & (1 << (b % 64)) != 0
            })
    }

    /// Pages inserted.
    pub fn entries(&self) -> u32 {
        self.entries
    }
}

/// A direct segment, its escape filter and the pages that escape it (exactly: the filter
/// answers for hardware, this set for the OS's ground truth).
#[derive(Clone, Debug)]
pub struct DirectSegment {
    /// The segment as the OS made it (the ground truth).
    pub seg: Segment,
    /// The segment registers the hardware reads: `seg`, unless `--verify`'s self-test
    /// corrupted them ([`DirectSegment::corrupt`]).
    pub regs: Segment,
    pub filter: EscapeFilter,
    escaped: FxHashSet<u64>,
}

/// How the hardware's check of an address against a segment came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentCheck {
    /// Outside the segment.
    Outside,
    /// Inside, and the filter lets it through: translated by the segment.
    Hit,
    /// Inside, but the filter says it escapes (`false_positive`: it does not really): paging
    /// translates it.
    Escaped { false_positive: bool },
}

impl DirectSegment {
    pub fn new(seg: Segment, filter: EscapeFilter) -> DirectSegment {
        DirectSegment {
            seg,
            regs: seg,
            filter,
            escaped: FxHashSet::default(),
        }
    }

    /// Fault injection, the self-test of `--verify` (`sim.verify_inject_after`): point the
    /// registers' offset two pages further, so every address the segment translates lands on
    /// the wrong frame.
    pub fn corrupt(&mut self) {
        self.regs.to += 2 * 4096;
    }

    /// Grow the segment (and its registers) by `bytes` past its limit.
    pub fn extend(&mut self, bytes: u64) {
        self.seg.limit += bytes;
        self.regs.limit += bytes;
    }

    /// The hardware's translation of `a` (inside the registers' bounds).
    #[inline]
    pub fn apply(&self, a: u64) -> u64 {
        self.regs.apply(a)
    }

    /// Let the page holding `a` escape the segment.
    pub fn escape(&mut self, a: u64) {
        if self.escaped.insert(a >> 12) {
            self.filter.insert(a >> 12);
        }
    }

    /// Whether the page holding `a` escapes the segment (the OS's answer: exact).
    pub fn escapes(&self, a: u64) -> bool {
        self.escaped.contains(&(a >> 12))
    }

    /// Whether any page of `[first, last]` escapes.
    pub fn escapes_any(&self, first: u64, last: u64) -> bool {
        self.escaped
            .iter()
            .any(|&p| (first >> 12) <= p && p <= (last >> 12))
    }

    /// Whether the segment maps `a` in the OS's ground truth.
    #[inline]
    pub fn maps(&self, a: u64) -> bool {
        self.seg.contains(a) && !self.escapes(a)
    }

    /// The hardware's check: base and limit, and the escape filter.
    #[inline]
    pub fn check(&self, a: u64) -> SegmentCheck {
        if !self.regs.contains(a) {
            SegmentCheck::Outside
        } else if self.filter.may_contain(a >> 12) {
            SegmentCheck::Escaped {
                false_positive: !self.escapes(a),
            }
        } else {
            SegmentCheck::Hit
        }
    }

    pub fn escaped_pages(&self) -> usize {
        self.escaped.len()
    }
}

/// Segment-check counters of one side (guest or VMM segment).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SegmentStats {
    /// Addresses checked against the segment.
    pub checks: u64,
    /// Translated by the segment.
    pub hits: u64,
    /// Inside the segment but sent to paging by the escape filter.
    pub escaped: u64,
    /// Of those, pages that do not escape (the filter's false positives).
    pub false_positives: u64,
}

impl SegmentStats {
    /// Count one check.
    pub fn count(&mut self, c: SegmentCheck) {
        self.checks += 1;
        match c {
            SegmentCheck::Outside => {}
            SegmentCheck::Hit => self.hits += 1,
            SegmentCheck::Escaped { false_positive } => {
                self.escaped += 1;
                self.false_positives += false_positive as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn a_segment_adds_its_offset_inside_its_bounds_only() {
        let s = Segment::new(0x1000_0000, 0x4000_0000, 0x2_0000_0000);
        assert!(s.contains(0x1000_0000) && s.contains(0x4fff_ffff));
        assert!(!s.contains(0x0fff_ffff) && !s.contains(0x5000_0000));
        assert_eq!(s.apply(0x1000_1234), 0x2_0000_1234);
        assert_eq!(s.bytes(), 0x4000_0000);
    }

    #[test]
    fn the_filter_has_no_false_negatives_and_few_false_positives_at_16_pages() {
        let mut rng = Rng::new(3, stream::PLACEMENT);
        let mut f = EscapeFilter::new(256, 4, &mut rng);
        let pages: Vec<u64> = (0..16).map(|_| rng.next_u64() >> 30).collect();
        for &p in &pages {
            f.insert(p);
        }
        assert!(pages.iter().all(|&p| f.may_contain(p)));
        // 16 keys, 4 hashes, 256 bits: (1 - e^(-64/256))^4 ~ 0.24% false positives.
        let probes = 100_000u64;
        let fp = (0..probes)
            .filter(|&i| f.may_contain(0x1_0000_0000 + i * 7919))
            .count();
        assert!(
            fp > 0 && (fp as f64) < 0.01 * probes as f64,
            "{fp} false positives"
        );
    }

    #[test]
    fn an_escaped_page_leaves_the_segment_to_paging() {
        let mut rng = Rng::new(1, stream::PLACEMENT);
        let mut d = DirectSegment::new(
            Segment::new(0x4000_0000, 0x1000_0000, 0x8000_0000),
            EscapeFilter::new(256, 4, &mut rng),
        );
        assert_eq!(d.check(0x4000_5000), SegmentCheck::Hit);
        d.escape(0x4000_5123);
        assert!(!d.maps(0x4000_5000) && d.maps(0x4000_6000));
        assert_eq!(
            d.check(0x4000_5fff),
            SegmentCheck::Escaped {
                false_positive: false
            }
        );
        assert_eq!(d.check(0x3fff_ffff), SegmentCheck::Outside);
    }
}
