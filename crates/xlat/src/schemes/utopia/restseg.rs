//! The geometry of Utopia's restrictive segments (RestSegs, Utopia §5.1-§5.2): where each
//! lies in physical memory, how a VPN picks its set and tag, and how the per-process tag
//! array (TAR) and set filter (SF) of a RestSeg are laid out in memory.
//!
//! A RestSeg is set-associative memory: `sets × ways` slots of one page size, at a contiguous,
//! size-aligned physical range the OS reserves at boot. Page `vpn` (in units of the segment's
//! page size) may live only in set `vpn mod sets` (the modulo hash of §5.2), under tag
//! `vpn / sets`. The slot of way `w` of set `s` is the page frame `base + (s × ways + w)`, §5.2's
//! formula (`SlotOrder::SetMajor`), or `base + (w × sets + s)` (`SlotOrder::WayMajor`): each
//! way a contiguous region in which consecutive pages of a process take consecutive frames.
//! The order matters to physically indexed caches and DRAM: set-major puts consecutive
//! virtual pages `ways` frames apart (64 KiB with 16 ways), where they share the same few
//! sets of an L2 or LLC.
//!
//! Everything here is arithmetic on the config and the memory size: the frame policy (the
//! OS's global view), the page tables (each process's TAR and SF) and the MMU (the RestSeg
//! walk) compute the same layout without sharing state.

use super::{SlotOrder, UtopiaConfig};
use crate::addr::{PageSize, Pfn, Vpn};
use crate::error::{Error, Result};
use crate::mem::physmem::MAX_ORDER;

/// Metadata bits of each TAR entry beside the tag (§5.2: "8 extra bits for various
/// permissions and other metadata"). Bit 0 is the valid bit.
pub const TAR_META_BITS: u32 = 8;
pub const TAR_VALID: u64 = 1;

/// Most bytes a process's TAR and SF take per slot of a RestSeg: a TAR entry of at most 8
/// bytes (tag and metadata rounded up to 1, 2, 4 or 8) and an SF counter of at most a
/// byte per set, less per slot.
pub const MAX_TAR_SF_BYTES_PER_SLOT: u64 = 8 + 1;

/// One RestSeg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestSeg {
    /// Its position in `[schemes.utopia] restsegs` (and in stats).
    pub id: usize,
    pub page: PageSize,
    pub sets: u64,
    pub ways: u64,
    /// First 4 KiB frame of the segment.
    pub base: Pfn,
    /// Bits of a TAR tag: the VA bits above the page offset and the set index.
    pub tag_bits: u32,
    /// Bytes of one TAR entry (tag and metadata, rounded up to 1, 2, 4 or 8 bytes).
    pub entry_bytes: u64,
    /// Bits of one SF counter (§5.2: log2(ways), at least one bit, rounded up to 1, 2, 4 or
    /// 8 so that no counter straddles a byte).
    pub sf_bits: u64,
    pub order: SlotOrder,
}

impl RestSeg {
    /// Set and tag of the page containing 4 KiB page `vpn`.
    #[inline]
    pub fn index(&self, vpn: Vpn) -> (u64, u64) {
        let page = vpn.0 >> self.page.order();
        (page % self.sets, page / self.sets)
    }

    /// Slots (pages) of the segment.
    pub fn slots(&self) -> u64 {
        self.sets * self.ways
    }

    pub fn bytes(&self) -> u64 {
        self.slots() * self.page.bytes()
    }

    /// First frame of way `way` of set `set`.
    #[inline]
    pub fn slot_pfn(&self, set: u64, way: u64) -> Pfn {
        let slot = match self.order {
            SlotOrder::SetMajor => set * self.ways + way,
            SlotOrder::WayMajor => way * self.sets + set,
        };
        Pfn(self.base.0 + slot * self.page.base_pages())
    }

    /// `(set, way)` of the slot whose first frame is `pfn`, if it is one of this segment's.
    #[inline]
    pub fn slot_of(&self, pfn: Pfn) -> Option<(u64, u64)> {
        let off = pfn.0.checked_sub(self.base.0)?;
        let slot = off / self.page.base_pages();
        (slot < self.slots() && off.is_multiple_of(self.page.base_pages())).then(|| {
            match self.order {
                SlotOrder::SetMajor => (slot / self.ways, slot % self.ways),
                SlotOrder::WayMajor => (slot % self.sets, slot / self.sets),
            }
        })
    }

    /// Bytes of the TAR entries of one set: they fit one cache line (§5.2), so one read
    /// fetches a set's tags.
    pub fn tar_set_bytes(&self) -> u64 {
        self.ways * self.entry_bytes
    }

    /// Bytes of one process's TAR of this segment.
    pub fn tar_bytes(&self) -> u64 {
        self.sets * self.tar_set_bytes()
    }

    /// Bytes of one process's SF of this segment (§5.2: `sets × log2(ways)` bits).
    pub fn sf_bytes(&self) -> u64 {
        (self.sets * self.sf_bits).div_ceil(8)
    }

    /// Index of the 64-byte line of a TAR holding set `set`'s tags.
    #[inline]
    pub fn tar_line(&self, set: u64) -> u64 {
        set * self.tar_set_bytes() / 64
    }

    /// Index of the 64-byte line of an SF holding set `set`'s counter.
    #[inline]
    pub fn sf_line(&self, set: u64) -> u64 {
        set * self.sf_bits / 8 / 64
    }

    /// Largest value an SF counter holds. A set may hold `ways` pages of a process, one more
    /// than `log2(ways)` bits count, so the counter saturates: what the RestSeg walk needs is
    /// only whether it is zero, and the OS rewrites it from the TAR on every change.
    pub fn sf_max(&self) -> u64 {
        (1u64 << self.sf_bits) - 1
    }

    /// A TAR entry holding `tag`, valid.
    #[inline]
    pub fn tar_value(&self, tag: u64) -> u64 {
        (tag << TAR_META_BITS) | TAR_VALID
    }
}

/// The RestSegs of a system, placed at the top of physical memory, largest first, each
/// aligned to its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub segs: Vec<RestSeg>,
}

impl Layout {
    /// The RestSegs `cfg` describes in `memory_bytes` of physical memory, translating
    /// `va_bits`-bit virtual addresses. Errors name the offending key.
    pub fn new(cfg: &UtopiaConfig, memory_bytes: u64, va_bits: u32) -> Result<Layout> {
        let mut order: Vec<usize> = (0..cfg.restsegs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(cfg.restsegs[i].bytes));
        let mut top = memory_bytes;
        let mut segs = vec![None; cfg.restsegs.len()];
        for i in order {
            let c = &cfg.restsegs[i];
            let key = |k: &str| format!("schemes.utopia.restsegs[{i}].{k}");
            let page = c.page;
            if page == PageSize::Size1G {
                return Err(Error::config(key("page"), "must be 4K or 2M".to_string()));
            }
            if c.ways == 0 || !c.ways.is_power_of_two() {
                return Err(Error::config(
                    key("ways"),
                    format!("must be a power of two, got {}", c.ways),
                ));
            }
            let min = page.bytes() * c.ways;
            if !c.bytes.is_power_of_two() || c.bytes < min {
                return Err(Error::config(
                    key("bytes"),
                    format!(
                        "must be a power of two of at least ways × page size = {min}, got {}",
                        c.bytes
                    ),
                ));
            }
            let start = top
                .checked_sub(c.bytes)
                .map(|s| s & !(c.bytes - 1))
                .ok_or_else(|| {
                    Error::config(
                        key("bytes"),
                        format!(
                            "the RestSegs do not fit in os.physmem.bytes = {memory_bytes} \
                             (each lies at the top of memory, aligned to its size)"
                        ),
                    )
                })?;
            top = start;
            let sets = c.bytes / min;
            let tag_bits = va_bits - page.shift() - sets.ilog2();
            let entry_bytes = u64::from(tag_bits + TAR_META_BITS)
                .div_ceil(8)
                .next_power_of_two();
            if c.ways * entry_bytes > 64 {
                return Err(Error::config(
                    key("ways"),
                    format!(
                        "the tags of a set must fit one 64-byte line (§5.2): {} ways × {} \
                         bytes a tag ({} tag bits + {} metadata) is {} bytes; use fewer ways \
                         or more sets",
                        c.ways,
                        entry_bytes,
                        tag_bits,
                        TAR_META_BITS,
                        c.ways * entry_bytes
                    ),
                ));
            }
            let sf_bits = u64::from(c.ways.ilog2().max(1)).next_power_of_two();
            segs[i] = Some(RestSeg {
                id: i,
                page,
                sets,
                ways: c.ways,
                base: Pfn(start >> 12),
                tag_bits,
                entry_bytes,
                sf_bits,
                order: cfg.slot_order,
            });
        }
        Ok(Layout {
            segs: segs
                .into_iter()
                .map(|s| s.expect("every segment placed"))
                .collect(),
        })
    }

    /// The segment and `(set, way)` of the slot starting at frame `pfn`, if any.
    #[inline]
    pub fn slot_of(&self, pfn: Pfn) -> Option<(&RestSeg, u64, u64)> {
        self.segs
            .iter()
            .find_map(|s| s.slot_of(pfn).map(|(set, way)| (s, set, way)))
    }

    /// The segments of page size `size`.
    pub fn of_size(&self, size: PageSize) -> impl Iterator<Item = &RestSeg> {
        self.segs.iter().filter(move |s| s.page == size)
    }

    /// The blocks of physical memory the segments occupy, as `(first frame, order)` buddy
    /// blocks (a segment above 1 GiB takes several).
    pub fn blocks(&self) -> Vec<(Pfn, u32)> {
        let mut out = Vec::new();
        for s in &self.segs {
            let frames = s.bytes() >> 12;
            let order = frames.ilog2().min(MAX_ORDER);
            for k in 0..frames >> order {
                out.push((Pfn(s.base.0 + (k << order)), order));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{RestSegConfig, UtopiaConfig};
    use super::*;

    fn table1() -> UtopiaConfig {
        UtopiaConfig::default()
    }

    #[test]
    fn table_1s_segments_sit_at_the_top_of_32_gib_aligned_to_their_size() {
        let l = Layout::new(&table1(), 32 << 30, 48).unwrap();
        let [s4k, s2m] = [l.segs[0], l.segs[1]];
        assert_eq!((s4k.page, s4k.sets, s4k.ways), (PageSize::Size4K, 8192, 16));
        assert_eq!((s2m.page, s2m.sets, s2m.ways), (PageSize::Size2M, 16, 16));
        // Equal sizes keep their order: the first listed takes the top.
        assert_eq!(s4k.base.0 << 12, (32 << 30) - (512 << 20));
        assert_eq!(s2m.base.0 << 12, (32 << 30) - (1024 << 20));
        assert_eq!(l.blocks(), vec![(s4k.base, 17), (s2m.base, 17)]);
    }

    #[test]
    fn tag_sizes_follow_section_5_2s_example() {
        // §5.2: a 2 GB 4-way RestSeg of 4 KB pages has 2^17 sets and 48 - 12 - 17 = 19-bit
        // tags (28 with 57-bit addresses); its SF is 2 GB / (4 KB × 4) × log2(4) bits = 32 KB.
        let cfg = UtopiaConfig {
            restsegs: vec![RestSegConfig {
                bytes: 2 << 30,
                page: PageSize::Size4K,
                ways: 4,
            }],
            ..table1()
        };
        let s = Layout::new(&cfg, 8 << 30, 48).unwrap().segs[0];
        assert_eq!((s.sets, s.tag_bits), (1 << 17, 19));
        assert_eq!(s.sf_bytes(), 32 << 10);
        assert_eq!(s.entry_bytes, 4); // 19 + 8 bits
        assert!(s.tar_set_bytes() <= 64);
        let s57 = Layout::new(&cfg, 8 << 30, 57).unwrap().segs[0];
        assert_eq!(s57.tag_bits, 28);
    }

    #[test]
    fn slots_and_frames_are_inverse_in_either_order() {
        let mut cfg = table1();
        for order in [SlotOrder::SetMajor, SlotOrder::WayMajor] {
            cfg.slot_order = order;
            let l = Layout::new(&cfg, 4 << 30, 48).unwrap();
            for s in &l.segs {
                for (set, way) in [(0, 0), (3, 7), (s.sets - 1, s.ways - 1)] {
                    let pfn = s.slot_pfn(set, way);
                    assert_eq!(
                        l.slot_of(pfn).map(|(r, a, b)| (r.id, a, b)),
                        Some((s.id, set, way))
                    );
                }
                assert_eq!(s.slot_of(Pfn(s.base.0 + s.bytes() / 4096)), None);
            }
            assert!(l.slot_of(Pfn(0)).is_none());
            // Neighbouring sets: `ways` pages apart set-major, adjacent way-major.
            let s = l.segs[0];
            let step = s.slot_pfn(1, 0).0 - s.slot_pfn(0, 0).0;
            assert_eq!(step, if order == SlotOrder::SetMajor { 16 } else { 1 });
        }
    }

    #[test]
    fn bad_geometry_names_its_key() {
        let mut cfg = table1();
        cfg.restsegs[1].ways = 32; // 32 × 4-byte tags do not fit a line
        let e = Layout::new(&cfg, 4 << 30, 48).unwrap_err().to_string();
        assert!(e.contains("restsegs[1].ways"), "{e}");
        let e = Layout::new(&table1(), 512 << 20, 48)
            .unwrap_err()
            .to_string();
        assert!(e.contains("os.physmem.bytes"), "{e}");
        cfg = table1();
        cfg.restsegs[0].bytes = 3 << 20;
        let e = Layout::new(&cfg, 4 << 30, 48).unwrap_err().to_string();
        assert!(e.contains("restsegs[0].bytes"), "{e}");
    }
}
